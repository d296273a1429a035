// docs/org.ferry.Ferry1.xml must describe exactly what the running service exports.
// With FERRY_WRITE_DBUS_XML=path the test (re)writes that file first (`ninja update-dbus-xml`).

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "fixture.hpp"

namespace ferry::test {
namespace {

const char* iface_open = "<interface name=\"org.ferry.Ferry1\">";

std::string attr(const std::string& tag, const std::string& name) {
  std::string key = " " + name + "=\"";
  size_t p = tag.find(key);
  if (p == std::string::npos) return "";
  p += key.size();
  return tag.substr(p, tag.find('"', p) - p);
}

// Flattens the org.ferry.Ferry1 interface into comparable lines:
// "method SetTransferMode in:s:target_kind ...", "property Gpus aa{sv} read", "signal ...".
std::set<std::string> members(const std::string& xml) {
  std::set<std::string> out;
  size_t start = xml.find(iface_open);
  if (start == std::string::npos) return out;
  size_t end = xml.find("</interface>", start);
  std::string body = xml.substr(start, end - start);
  std::string current;
  for (size_t p = body.find('<', 1); p != std::string::npos; p = body.find('<', p + 1)) {
    std::string tag = body.substr(p, body.find('>', p) - p + 1);
    if (tag.rfind("<method ", 0) == 0 || tag.rfind("<signal ", 0) == 0) {
      current = tag.substr(1, 6) + " " + attr(tag, "name");
      if (tag.find("/>") != std::string::npos) {
        out.insert(current);
        current.clear();
      }
    } else if (tag.rfind("<arg ", 0) == 0) {
      std::string dir = attr(tag, "direction");
      current += " " + (dir.empty() ? std::string("out") : dir) + ":" + attr(tag, "type") + ":" +
                 attr(tag, "name");
    } else if (tag == "</method>" || tag == "</signal>") {
      out.insert(current);
      current.clear();
    } else if (tag.rfind("<property ", 0) == 0) {
      out.insert("property " + attr(tag, "name") + " " + attr(tag, "type") + " " +
                 attr(tag, "access"));
    }
  }
  return out;
}

std::string introspect(sd_bus* bus) {
  sd_bus_message* reply = nullptr;
  sd_bus_error err = SD_BUS_ERROR_NULL;
  std::string xml;
  if (sd_bus_call_method(bus, "org.ferry.Ferry1", "/org/ferry/Ferry1",
                         "org.freedesktop.DBus.Introspectable", "Introspect", &err, &reply,
                         "") >= 0) {
    const char* s = nullptr;
    if (sd_bus_message_read(reply, "s", &s) >= 0) xml = s;
  }
  sd_bus_message_unref(reply);
  sd_bus_error_free(&err);
  return xml;
}

void write_docs_xml(const std::string& live, const char* path) {
  size_t start = live.find(iface_open);
  size_t end = live.find("</interface>", start) + std::string("</interface>").size();
  std::ofstream f(path);
  f << "<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\"\n"
       " \"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd\">\n"
       "<!-- ferry's control API, as exported by ferryd on the session bus under the name\n"
       "     org.ferry.Ferry1 at /org/ferry/Ferry1. Generated from the running service\n"
       "     (ninja -C BUILD update-dbus-xml); do not edit. See docs/dbus-api.md. -->\n"
       "<node name=\"/org/ferry/Ferry1\">\n"
    << " " << live.substr(start, end - start) << "\n</node>\n";
}

using Introspection = ServiceTest;

TEST_F(Introspection, DocsXmlMatchesTheLiveService) {
  std::string live = introspect(client_);
  ASSERT_NE(live.find(iface_open), std::string::npos) << live;
  if (const char* out = std::getenv("FERRY_WRITE_DBUS_XML")) write_docs_xml(live, out);

  const char* path = std::getenv("FERRY_DBUS_XML");
  ASSERT_NE(path, nullptr) << "FERRY_DBUS_XML not set";
  std::ifstream f(path);
  ASSERT_TRUE(f.good()) << path;
  std::stringstream docs;
  docs << f.rdbuf();

  std::set<std::string> want = members(docs.str());
  std::set<std::string> have = members(live);
  // Every method, property and signal of the docs is exported, with the same signature...
  for (const std::string& m : want) EXPECT_TRUE(have.count(m)) << "not exported: " << m;
  // ...and nothing is exported that the docs do not describe.
  for (const std::string& m : have) EXPECT_TRUE(want.count(m)) << "not in docs: " << m;
  EXPECT_TRUE(have.count("method SetTransferMode in:s:target_kind in:s:target in:s:mode"));
  EXPECT_TRUE(have.count("property Surfaces aa{sv} read"));
  EXPECT_GE(want.size(), 12u);
}

}  // namespace
}  // namespace ferry::test
