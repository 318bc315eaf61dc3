// The `lumen` command line (placeholder until the CLI helper lands check-vectors).
#include <iostream>

int main() { std::cout << "lumen\n"; return 0; }
