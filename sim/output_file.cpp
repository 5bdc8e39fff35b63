#include "sim/output_file.hpp"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <streambuf>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cuboid::sim {
namespace {

std::string os_reason(int error) { return std::strerror(error); }

std::string folder_of(const std::string& path) {
    const auto slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

std::string name_of(const std::string& path) {
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Tells apart the temporaries of one process (pid) and of one process's outputs (counter).
std::atomic<unsigned> g_temporaries{0};

// Creates a fresh temporary beside `path`, readable as a new file of the user's would be (the
// mode through the umask, as open gives it). Returns the descriptor; throws OutputError.
int create_temporary(const std::string& path, std::string& temporary) {
    // Appended one piece at a time (GCC 12 warns falsely on chained string concatenation).
    std::string prefix = folder_of(path);
    prefix.append("/.").append(name_of(path)).append(".tmp-").append(std::to_string(getpid())).append("-");
    for (int attempt = 0; attempt < 100; ++attempt) {
        temporary = prefix;
        temporary.append(std::to_string(g_temporaries.fetch_add(1)));
        const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) return fd;
        if (errno != EEXIST)
            throw OutputError(path,
                              std::string("cannot create a file in its folder (").append(os_reason(errno)).append(")"));
    }
    throw OutputError(path, "cannot create a temporary file in its folder (every name taken)");
}

}  // namespace

namespace {

std::string output_message(const std::string& path, const std::string& reason) {
    std::string m = "cannot write ";
    m.append(path).append(": ").append(reason);
    return m;
}

}  // namespace

OutputError::OutputError(const std::string& path, const std::string& reason)
    : std::runtime_error(output_message(path, reason)), path_(path) {}

// A stream buffer over a file descriptor that remembers the first failed write's errno: an
// ofstream would only say that something failed, not why.
class OutputFile::Buffer : public std::streambuf {
public:
    explicit Buffer(int fd) : fd_(fd), data_(1 << 16) { setp(data_.data(), data_.data() + data_.size()); }
    ~Buffer() override { close_quietly(); }

    int fd() const { return fd_; }
    int error() const { return error_; }

    // Closes, keeping the first error; true when nothing failed.
    bool close() {
        drain();
        if (fd_ >= 0 && ::close(fd_) != 0 && error_ == 0) error_ = errno;
        fd_ = -1;
        return error_ == 0;
    }
    void close_quietly() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }
    bool drain() {
        const char* p = pbase();
        std::size_t left = static_cast<std::size_t>(pptr() - pbase());
        while (left > 0 && error_ == 0) {
            const ssize_t n = ::write(fd_, p, left);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                error_ = n < 0 ? errno : EIO;
                break;
            }
            p += n;
            left -= static_cast<std::size_t>(n);
        }
        setp(data_.data(), data_.data() + data_.size());
        return error_ == 0;
    }

protected:
    int_type overflow(int_type c) override {
        if (!drain()) return traits_type::eof();
        if (!traits_type::eq_int_type(c, traits_type::eof())) {
            *pptr() = traits_type::to_char_type(c);
            pbump(1);
        }
        return traits_type::not_eof(c);
    }
    int sync() override { return drain() ? 0 : -1; }

private:
    int fd_;
    int error_ = 0;
    std::vector<char> data_;
};

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
    if (path_.empty()) throw OutputError("''", "an empty path names no file");
    struct stat target {};
    const bool exists = ::stat(path_.c_str(), &target) == 0;
    if (exists && S_ISDIR(target.st_mode)) throw OutputError(path_, "it is a folder");
    int fd = -1;
    if (exists && S_ISREG(target.st_mode)) {
        // Through a symbolic link the file it points at is replaced, not the link.
        if (char* real = ::realpath(path_.c_str(), nullptr)) {
            target_ = real;
            std::free(real);
        }
    }
    if (exists && !S_ISREG(target.st_mode)) {
        fd = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
        if (fd < 0) throw OutputError(path_, os_reason(errno));
    } else {
        fd = create_temporary(target_.empty() ? path_ : target_, temporary_);
        // A replaced file keeps its permissions.
        if (exists) ::fchmod(fd, target.st_mode & 07777);
    }
    buffer_ = std::make_unique<Buffer>(fd);
    stream_ = std::make_unique<std::ostream>(buffer_.get());
}

OutputFile::~OutputFile() {
    if (!buffer_) return;
    buffer_->close_quietly();
    if (!temporary_.empty()) ::unlink(temporary_.c_str());
}

std::ostream& OutputFile::stream() { return *stream_; }

void OutputFile::commit() {
    stream_->flush();
    bool ok = buffer_->drain();
    // A device (or a FIFO) cannot be synced, and need not be: its writes are done.
    if (ok && !temporary_.empty() && ::fsync(buffer_->fd()) != 0) {
        const int e = errno;
        buffer_->close_quietly();
        ::unlink(temporary_.c_str());
        buffer_.reset();
        throw OutputError(path_, os_reason(e));
    }
    ok = buffer_->close() && ok;
    const int error = buffer_->error();
    if (!ok) {
        if (!temporary_.empty()) ::unlink(temporary_.c_str());
        buffer_.reset();
        throw OutputError(path_, os_reason(error ? error : EIO));
    }
    if (!temporary_.empty() && ::rename(temporary_.c_str(), (target_.empty() ? path_ : target_).c_str()) != 0) {
        const int e = errno;
        ::unlink(temporary_.c_str());
        buffer_.reset();
        throw OutputError(path_, os_reason(e));
    }
    buffer_.reset();
}

void write_output_file(const std::string& path, const std::string& text) {
    OutputFile file(path);
    file.stream() << text;
    file.commit();
}

void finish_standard_output(std::ostream& out) {
    out.flush();
    if (out.fail()) throw OutputError("standard output", os_reason(errno ? errno : EIO));
}

}  // namespace cuboid::sim
