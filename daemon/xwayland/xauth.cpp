#include "xwayland/xauth.hpp"

#include <pwd.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "config/runtime.hpp"

namespace ferry::xwayland {
namespace {

constexpr uint16_t kFamilyWild = 0xffff;

void put_u16(std::string& out, uint16_t v) {
  out += char(v >> 8);
  out += char(v & 0xff);
}

void put_counted(std::string& out, std::string_view bytes) {
  put_u16(out, uint16_t(bytes.size()));
  out += bytes;
}

}  // namespace

std::optional<Cookie> new_cookie(std::string* error) {
  Cookie c{};
  size_t done = 0;
  while (done < c.size()) {
    ssize_t n = ::getrandom(c.data() + done, c.size() - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = std::string("getrandom: ") + std::strerror(errno);
      return std::nullopt;
    }
    done += size_t(n);
  }
  return c;
}

std::string xauthority_entry(int display_number, const Cookie& cookie) {
  std::string out;
  put_u16(out, kFamilyWild);
  put_counted(out, "");
  put_counted(out, std::to_string(display_number));
  put_counted(out, kCookieName);
  put_counted(out, std::string_view(reinterpret_cast<const char*>(cookie.data()), cookie.size()));
  return out;
}

bool write_xauthority(int display_number, const Cookie& cookie, std::string* error) {
  return config::write_xauthority_file(":" + std::to_string(display_number),
                                       xauthority_entry(display_number, cookie), error);
}

std::string localuser_host() {
  long size = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buf(size > 0 ? size_t(size) : 16384);
  passwd pw{};
  passwd* found = nullptr;
  if (::getpwuid_r(::geteuid(), &pw, buf.data(), buf.size(), &found) != 0 || !found ||
      !found->pw_name || !*found->pw_name)
    return "";
  std::string host = "localuser";
  host += '\0';
  host += found->pw_name;
  return host;
}

}  // namespace ferry::xwayland
