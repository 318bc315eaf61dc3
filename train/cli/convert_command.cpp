// Format detection by extension, the conversions, and the inspect listing.
#include "train/cli/convert_command.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

#include "core/error.h"
#include "core/safetensors.h"
#include "datasets/demo.h"
#include "datasets/image.h"
#include "datasets/nifti.h"
#include "datasets/npy.h"

namespace lumen::train::cli {

namespace {

enum class Format { nifti, npy, npz, safetensors, image, png };

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Format format_of(const std::string& path) {
    if (ends_with(path, ".nii") || ends_with(path, ".nii.gz")) return Format::nifti;
    if (ends_with(path, ".npy")) return Format::npy;
    if (ends_with(path, ".npz")) return Format::npz;
    if (ends_with(path, ".safetensors")) return Format::safetensors;
    if (ends_with(path, ".png") || ends_with(path, ".PNG")) return Format::png;
    for (const char* ext : {".jpg", ".jpeg", ".JPG", ".JPEG", ".bmp", ".BMP", ".tga", ".TGA"})
        if (ends_with(path, ext)) return Format::image;
    LUMEN_FAIL("convert", path,
               ": unknown format (extensions: .nii, .nii.gz, .npy, .npz, .safetensors, .png, "
               ".jpg, .jpeg, .bmp, .tga)");
}

const char* format_name(Format f) {
    switch (f) {
        case Format::nifti: return "NIfTI";
        case Format::npy: return "NPY";
        case Format::npz: return "NPZ";
        case Format::png: return "PNG";
        case Format::image: return "image";
        default: return "safetensors";
    }
}

// What a file holds, as named tensors (and the NIfTI header when it is one).
struct Contents {
    std::map<std::string, Tensor> tensors;
    std::optional<datasets::NiftiHeader> nifti;
};

Tensor affine_tensor(const std::array<double, 16>& affine) {
    return from_vector<double>(std::vector<double>(affine.begin(), affine.end()), {4, 4});
}

Contents read_any(const std::string& path, bool keep_dtype) {
    Contents c;
    auto as_image = [&](const Tensor& t) { return keep_dtype ? t : t.to(DType::float32); };
    switch (format_of(path)) {
        case Format::nifti: {
            datasets::NiftiImage image = datasets::read_nifti(path);
            c.tensors["image"] = keep_dtype ? image.data : image.fdata().to(DType::float32);
            c.tensors["affine"] = affine_tensor(image.header.affine());
            c.nifti = image.header;
            break;
        }
        case Format::npy: c.tensors["image"] = as_image(datasets::read_npy(path).data); break;
        case Format::npz:
            for (auto& [name, array] : datasets::read_npz(path))
                c.tensors[name] = as_image(array.data);
            break;
        case Format::safetensors: c.tensors = load_safetensors(path).tensors; break;
        case Format::png:
        case Format::image: c.tensors["image"] = as_image(datasets::read_image(path)); break;
    }
    return c;
}

// The tensor a single-array format is written from: "image", or the only tensor.
Tensor single_tensor(const Contents& c, const std::string& in, const std::string& out) {
    if (c.tensors.count("image")) return c.tensors.at("image");
    LUMEN_CHECK(c.tensors.size() == 1, "convert", in, " holds ", c.tensors.size(),
                " tensors and none is named 'image': which one goes to ", out, "?");
    return c.tensors.begin()->second;
}

std::array<double, 16> affine_of(const Tensor& t, const std::string& path) {
    LUMEN_CHECK(t.shape() == Shape({4, 4}), "convert", path, ": 'affine' must be 4x4, got shape ",
                t.shape());
    std::vector<double> v = t.to_vector<double>();
    std::array<double, 16> a{};
    std::copy(v.begin(), v.end(), a.begin());
    return a;
}

// A floating image (as convert reads one without --keep-dtype) goes to PNG when its values are
// whole numbers in 0..65535: as uint8 when they fit 8 bits, else 16-bit.
Tensor png_values(const Tensor& image, const std::string& path) {
    if (!image.is_floating_point()) return image;
    Tensor v = image.to(DType::float64).contiguous();
    const double* x = static_cast<const double*>(v.data_ptr());
    double top = 0;
    for (int64_t i = 0; i < v.numel(); ++i) {
        LUMEN_CHECK(x[i] >= 0 && x[i] <= 65535 && x[i] == std::floor(x[i]), "convert", path,
                    ": PNG samples are whole numbers in 0..65535, got ", x[i],
                    " (scale or round the image first)");
        top = std::max(top, x[i]);
    }
    return v.to(top <= 255 ? DType::uint8 : DType::int32);
}

constexpr const char* kConvertUsage =
    "usage: lumen convert IN OUT [--keep-dtype]\n"
    "Converts between NIfTI (.nii, .nii.gz), NumPy (.npy, .npz), images (.png, .jpg, .bmp,\n"
    ".tga in; .png out) and safetensors. To safetensors: tensor 'image' (float32 unless\n"
    "--keep-dtype; NIfTI: nibabel's get_fdata() values in (i, j, k[, t]) order; images: (H, W,\n"
    "C) with the stored 0-255 or 0-65535 values) and, for NIfTI, 'affine' (float64 4x4,\n"
    "nibabel's img.affine); an .npz gives one tensor per member. From safetensors: 'image' (or\n"
    "the only tensor), with the geometry of 'affine' when writing NIfTI; a PNG is 8-bit for\n"
    "uint8 (or whole values up to 255), else 16-bit.\n";

}  // namespace

int run_convert_command(const std::vector<std::string>& args, std::ostream& out) {
    std::vector<std::string> paths;
    bool keep_dtype = false;
    for (const std::string& arg : args) {
        if (arg == "--help" || arg == "-h") {
            out << kConvertUsage;
            return 0;
        }
        if (arg == "--keep-dtype") {
            keep_dtype = true;
            continue;
        }
        LUMEN_CHECK(arg.empty() || arg[0] != '-', "lumen", "unknown option '", arg,
                    "' for 'convert'");
        paths.push_back(arg);
    }
    LUMEN_CHECK(paths.size() == 2, "lumen", "convert takes IN and OUT, got ", paths.size(),
                " paths (see 'lumen convert --help')");
    const std::string &in = paths[0], &target = paths[1];
    const Format to = format_of(target);
    Contents c = read_any(in, keep_dtype);
    switch (to) {
        case Format::safetensors:
            save_safetensors(target, c.tensors,
                             {{"source", in}, {"format", format_name(format_of(in))}});
            break;
        case Format::npy: datasets::write_npy(target, single_tensor(c, in, target)); break;
        case Format::npz: datasets::write_npz(target, c.tensors, true); break;
        case Format::png:
            datasets::write_png(target, png_values(single_tensor(c, in, target), target));
            break;
        case Format::image:
            LUMEN_FAIL("convert", target, ": lumen writes images as PNG only (.png)");
        case Format::nifti: {
            datasets::NiftiHeader header;
            if (c.nifti)
                header = *c.nifti;
            else if (c.tensors.count("affine"))
                header = datasets::nifti_header_from_affine(affine_of(c.tensors.at("affine"), in));
            else
                header = datasets::nifti_header_from_affine(
                    {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
            datasets::write_nifti(target, single_tensor(c, in, target), header);
            break;
        }
    }
    out << "wrote " << target << " (" << c.tensors.size() << " tensor"
        << (c.tensors.size() == 1 ? "" : "s") << " from " << in << ")\n";
    return 0;
}

namespace {

// Shape, dtype and the statistics of the finite values (NaN and infinities counted apart).
void print_tensor(std::ostream& out, const std::string& name, const Tensor& t) {
    out << "  " << name << ": shape " << t.shape() << ", " << t.dtype();
    if (t.numel() > 0 && t.dtype() != DType::bool_) {
        Tensor v = t.to(DType::float64).contiguous();
        const double* x = static_cast<const double*>(v.data_ptr());
        double lo = INFINITY, hi = -INFINITY, sum = 0, squares = 0;
        int64_t finite = 0;
        for (int64_t i = 0; i < v.numel(); ++i) {
            if (!std::isfinite(x[i])) continue;
            lo = std::min(lo, x[i]);
            hi = std::max(hi, x[i]);
            sum += x[i];
            ++finite;
        }
        const double mu = finite ? sum / double(finite) : NAN;
        for (int64_t i = 0; i < v.numel(); ++i)
            if (std::isfinite(x[i])) squares += (x[i] - mu) * (x[i] - mu);
        char line[200];
        std::snprintf(line, sizeof(line), ", min %.6g, max %.6g, mean %.6g, std %.6g", lo, hi, mu,
                      finite ? std::sqrt(squares / double(finite)) : NAN);
        out << line;
        if (finite < v.numel()) out << ", " << v.numel() - finite << " not finite";
    }
    out << "\n";
}

}  // namespace

int run_inspect_command(const std::vector<std::string>& args, std::ostream& out) {
    LUMEN_CHECK(args.size() == 1, "lumen", "inspect takes one FILE, got ", args.size());
    if (args[0] == "--help" || args[0] == "-h") {
        out << "usage: lumen inspect FILE   (.nii, .nii.gz, .npy, .npz, .safetensors)\n";
        return 0;
    }
    const std::string& path = args[0];
    Contents c = read_any(path, true);
    out << path << " (" << format_name(format_of(path)) << ")\n";
    if (c.nifti) {
        const datasets::NiftiHeader& h = *c.nifti;
        std::array<double, 16> a = h.affine();
        std::array<double, 3> s = h.spacing();
        char line[160];
        out << "  NIfTI-" << h.version << ", datatype " << h.datatype << ", qform_code "
            << h.qform_code << ", sform_code " << h.sform_code << ", scl_slope " << h.scl_slope
            << ", scl_inter " << h.scl_inter << "\n";
        std::snprintf(line, sizeof(line), "  spacing %g x %g x %g, orientation %s\n", s[0], s[1],
                      s[2], datasets::orientation_code(a).c_str());
        out << line << "  affine:\n";
        for (int r = 0; r < 4; ++r) {
            std::snprintf(line, sizeof(line), "    [%12.6g %12.6g %12.6g %12.6g]\n", a[4 * r],
                          a[4 * r + 1], a[4 * r + 2], a[4 * r + 3]);
            out << line;
        }
        c.tensors.erase("affine");
    }
    for (const auto& [name, t] : c.tensors) print_tensor(out, name, t);
    return 0;
}

int run_make_demo_command(const std::vector<std::string>& args, std::ostream& out) {
    std::string name, directory;
    uint64_t seed = 0;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg == "--help" || arg == "-h") {
            std::string names;
            for (const std::string& n : datasets::demo_names()) names += " " + n;
            out << "usage: lumen make-demo NAME --out DIR [--seed N]\nNAME:" << names
                << " (see datasets/demo.h or the README)\n";
            return 0;
        }
        if (arg == "--out" || arg == "--seed") {
            LUMEN_CHECK(i + 1 < args.size(), "lumen", arg, " needs a value");
            const std::string& value = args[++i];
            if (arg == "--out") {
                directory = value;
            } else {
                size_t used = 0;
                try {
                    seed = std::stoull(value, &used);
                } catch (const std::exception&) {
                    used = 0;
                }
                LUMEN_CHECK(used == value.size() && used > 0, "lumen",
                            "--seed expects a non-negative integer, got '", value, "'");
            }
            continue;
        }
        LUMEN_CHECK(arg.empty() || arg[0] != '-', "lumen", "unknown option '", arg,
                    "' for 'make-demo'");
        LUMEN_CHECK(name.empty(), "lumen", "make-demo takes one NAME, got '", name, "' and '", arg,
                    "'");
        name = arg;
    }
    LUMEN_CHECK(!name.empty() && !directory.empty(), "lumen",
                "make-demo needs NAME and --out DIR (see 'lumen make-demo --help')");
    datasets::make_demo(name, directory, seed, out);
    return 0;
}

}  // namespace lumen::train::cli
