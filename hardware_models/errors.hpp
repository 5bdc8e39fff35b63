// Errors that come from what the user wrote. They carry where (file, line, key) so the message
// can point at it; anything else that goes wrong is a programmer error.
#pragma once

#include <stdexcept>
#include <string>

namespace cuboid {

struct InputLocation {
    std::string file;  // empty: not from a file (a --set override, a built-in default)
    int line = 0;      // 1-based; 0 unknown
    std::string key;   // dotted path: "parallel.tensor"
};

class InputError : public std::runtime_error {
public:
    InputError(InputLocation where, const std::string& message)
        : std::runtime_error(format(where, message)), where_(std::move(where)) {}
    const InputLocation& where() const { return where_; }

    static std::string format(const InputLocation& w, const std::string& message) {
        // Appends one piece at a time (GCC 12 warns falsely on chained string concatenation).
        std::string s;
        if (!w.file.empty()) {
            s.append(w.file);
            if (w.line > 0) s.append(":").append(std::to_string(w.line));
            s.append(": ");
        }
        if (!w.key.empty()) s.append("'").append(w.key).append("': ");
        s.append(message);
        return s;
    }

private:
    InputLocation where_;
};

}  // namespace cuboid
