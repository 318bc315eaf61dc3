#!/usr/bin/env python3
"""Turn docs/tutorial.md into one C++ program, so that the build proves its snippets compile and
the test command runs them (ctest test `example_tutorial`).

usage: tutorial_program.py docs/tutorial.md OUT.cpp

Every ```cpp block is taken in order. `#include` and `using namespace` lines, and blocks that
define a class, a struct or a registration (a namespace-scope `const ...Registration`), go to
namespace scope; every other block is a sequence of statements and goes into main(), one after
the other, so later snippets use the variables of earlier ones as the reader does.
"""
import re
import sys


def blocks(markdown):
    inside, lines = False, []
    for line in markdown.splitlines():
        if line.strip() == "```cpp":
            inside, lines = True, []
        elif line.strip() == "```" and inside:
            inside = False
            yield lines
        elif inside:
            lines.append(line)


def main():
    source, out = sys.argv[1], sys.argv[2]
    with open(source) as f:
        markdown = f.read()
    top, body = [], []
    for lines in blocks(markdown):
        code = [l for l in lines if not re.match(r"\s*(#include|using namespace)", l)]
        top += [l for l in lines if re.match(r"\s*(#include|using namespace)", l)]
        first = next((l for l in code if l.strip() and not l.strip().startswith("//")), "")
        if re.match(r"(class|struct)\s", first) or re.search(r"Registration\s+\w+\(", "\n".join(code)):
            top += code + [""]
        else:
            body += ["    " + l if l else "" for l in code] + [""]
    program = ["// Generated from " + source + " by examples/tutorial_program.py; do not edit.",
               "#include <cstdio>", "#include <iostream>", ""]
    directives = [l for l in top if l.startswith(("#include", "using namespace"))]
    program += list(dict.fromkeys(directives))  # each once, in order, before any code
    program += [""] + [l for l in top if not l.startswith(("#include", "using namespace"))]
    program += ["", "int main() {"] + body + ["    return 0;", "}", ""]
    with open(out, "w") as f:
        f.write("\n".join(program))


if __name__ == "__main__":
    main()
