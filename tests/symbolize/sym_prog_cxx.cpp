/*
 * A C++ program of ours built with -g, for the demangling of `btpack
 * symbolize`: it writes a crash record (without crashing) from a stack of
 * C++ functions whose names need the demangler: inlined function
 * templates (one of internal linkage), a member of a class template in
 * nested namespaces, a const member function, a constructor and a function
 * in an anonymous namespace.
 * Each call line carries a marker comment (`@frame:` and a key);
 * symbolize_cxx.py knows the demangled name each key must get.
 *
 *   sym_prog_cxx OUT
 */
#include <btpack/btpack.h>

#include <cstdio>
#include <fcntl.h>
#include <unistd.h>

#define NOINL __attribute__((noinline))

volatile int sink, failed;

namespace shapes {
namespace detail {

/* Internal linkage: DWARF has no linkage name for it, only "note<double>". */
template <typename T> static inline __attribute__((always_inline)) void note(int fd, T tag)
{
    failed += btp_crash_write_record(fd, NULL, 0, 0, 0, NULL) != BTP_OK; /* @frame:note */
    sink += static_cast<int>(tag);
}

template <typename T> inline __attribute__((always_inline)) void record(int fd, T tag)
{
    note<T>(fd, tag); /* @frame:record */
    sink++;
}

template <typename T, int N> struct Grid {
    T cells[N];
    NOINL void fill(int fd, T v);
};

template <typename T, int N> NOINL void Grid<T, N>::fill(int fd, T v)
{
    record<T>(fd, v); /* @frame:fill */
    for (int i = 0; i < N; i++)
        cells[i] = v;
    sink++;
}

} // namespace detail

class Canvas {
  public:
    NOINL explicit Canvas(int fd);
    NOINL int draw(const char *what) const;

  private:
    int fd_;
};

NOINL int Canvas::draw(const char *what) const
{
    detail::Grid<double, 4> g;
    g.fill(fd_, 1.5); /* @frame:draw */
    sink++;
    return what[0];
}

NOINL Canvas::Canvas(int fd) : fd_(fd)
{
    sink += draw("x"); /* @frame:ctor */
}

} // namespace shapes

namespace {
NOINL void start(int fd)
{
    shapes::Canvas c(fd); /* @frame:start */
    sink++;
}
} // namespace

int main(int argc, char **argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: sym_prog_cxx OUT\n");
        return 2;
    }
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        std::perror(argv[1]);
        return 1;
    }
    start(fd); /* @frame:main */
    close(fd);
    return failed;
}
