// The primary selection on both of its wires: GTK 3's gtk_primary_selection and
// zwp_primary_selection_v1 share one seat slot, so what a client selects through one is
// pasted, byte for byte, by a client speaking the other. The keyboard-focused client's
// device gets data_offer, its MIME types, then selection.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <vector>

#include "gtk-primary-selection-client-protocol.h"
#include "harness.hpp"
#include "primary-selection-unstable-v1-client-protocol.h"
#include "wl_client.hpp"

namespace ferry::itest {
namespace {

constexpr char kMime[] = "text/plain;charset=utf-8";
constexpr char kText[] = "selected with ferry";

// What a device saw: "offer" for data_offer, "mime TYPE", "selection" / "selection null".
struct DeviceLog {
  std::vector<std::string> events;
  void* offer = nullptr;  // of the last selection event
};
// What a source was asked: it writes kText for each send and counts them.
struct SourceLog {
  int sends = 0;
  std::string mime;
};

void write_text(SourceLog* log, const char* mime, int32_t fd) {
  ++log->sends;
  log->mime = mime;
  if (write(fd, kText, sizeof kText - 1) != ssize_t(sizeof kText - 1)) log->mime = "(short write)";
  close(fd);
}

const gtk_primary_selection_offer_listener kGtkOffer = {
    [](void* data, gtk_primary_selection_offer*, const char* mime) {
      static_cast<DeviceLog*>(data)->events.push_back(std::string("mime ") + mime);
    }};
const gtk_primary_selection_device_listener kGtkDevice = {
    [](void* data, gtk_primary_selection_device*, gtk_primary_selection_offer* offer) {
      static_cast<DeviceLog*>(data)->events.push_back("offer");
      gtk_primary_selection_offer_add_listener(offer, &kGtkOffer, data);
    },
    [](void* data, gtk_primary_selection_device*, gtk_primary_selection_offer* offer) {
      auto* log = static_cast<DeviceLog*>(data);
      log->events.push_back(offer ? "selection" : "selection null");
      log->offer = offer;
    }};
const gtk_primary_selection_source_listener kGtkSource = {
    [](void* data, gtk_primary_selection_source*, const char* mime, int32_t fd) {
      write_text(static_cast<SourceLog*>(data), mime, fd);
    },
    [](void*, gtk_primary_selection_source*) {}};

const zwp_primary_selection_offer_v1_listener kZwpOffer = {
    [](void* data, zwp_primary_selection_offer_v1*, const char* mime) {
      static_cast<DeviceLog*>(data)->events.push_back(std::string("mime ") + mime);
    }};
const zwp_primary_selection_device_v1_listener kZwpDevice = {
    [](void* data, zwp_primary_selection_device_v1*, zwp_primary_selection_offer_v1* offer) {
      static_cast<DeviceLog*>(data)->events.push_back("offer");
      zwp_primary_selection_offer_v1_add_listener(offer, &kZwpOffer, data);
    },
    [](void* data, zwp_primary_selection_device_v1*, zwp_primary_selection_offer_v1* offer) {
      auto* log = static_cast<DeviceLog*>(data);
      log->events.push_back(offer ? "selection" : "selection null");
      log->offer = offer;
    }};
const zwp_primary_selection_source_v1_listener kZwpSource = {
    [](void* data, zwp_primary_selection_source_v1*, const char* mime, int32_t fd) {
      write_text(static_cast<SourceLog*>(data), mime, fd);
    },
    [](void*, zwp_primary_selection_source_v1*) {}};

class PrimarySelection : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(f_.start({"--output", "320x240@60"}));
    std::string err;
    src_ = WlClient::connect(f_.socket_path(), &err);
    ASSERT_TRUE(src_) << err;
    sink_ = WlClient::connect(f_.socket_path(), &err);
    ASSERT_TRUE(sink_) << err;
    src_seat_ = static_cast<wl_seat*>(src_->bind(&wl_seat_interface, 1));
    sink_seat_ = static_cast<wl_seat*>(sink_->bind(&wl_seat_interface, 1));
    ASSERT_TRUE(src_seat_ && sink_seat_);
  }

  // The sink maps a window, which takes the keyboard focus (its device learns the
  // selection then).
  void focus_sink() {
    Toplevel t = sink_->create_toplevel(true);
    wl_surface_attach(t.surface, sink_->create_buffer(16, 16, WL_SHM_FORMAT_XRGB8888, 0xffffffffu)->buffer,
                      0, 0);
    wl_surface_commit(t.surface);
    ASSERT_GE(sink_->roundtrip(), 0);
  }

  // Both clients dispatch until the sink's device saw a selection with an offer.
  void wait_for_offer(const DeviceLog& log) {
    for (int i = 0; i < 100 && !log.offer; ++i) {
      ASSERT_GE(src_->roundtrip(), 0);
      ASSERT_TRUE(sink_->dispatch_for(10));
    }
    ASSERT_TRUE(log.offer);
  }

  // A pipe whose write end 'receive' hands over; the source's answer is read back.
  std::string paste(const std::function<void(int)>& receive, SourceLog& source) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) return "(no pipe)";
    receive(p[1]);
    close(p[1]);
    EXPECT_GE(sink_->roundtrip(), 0);
    for (int i = 0; i < 100 && source.sends == 0; ++i) EXPECT_TRUE(src_->dispatch_for(10));
    std::string got;
    char buf[64];
    for (ssize_t n; (n = read(p[0], buf, sizeof buf)) > 0;) got.append(buf, size_t(n));
    close(p[0]);
    return got;
  }

  Ferryd f_;
  std::unique_ptr<WlClient> src_, sink_;
  wl_seat *src_seat_ = nullptr, *sink_seat_ = nullptr;
};

TEST_F(PrimarySelection, GtkSelectionIsPastedByAZwpClient) {
  auto* zwp = static_cast<zwp_primary_selection_device_manager_v1*>(
      sink_->bind(&zwp_primary_selection_device_manager_v1_interface, 1));
  auto* gtk = static_cast<gtk_primary_selection_device_manager*>(
      src_->bind(&gtk_primary_selection_device_manager_interface, 1));
  ASSERT_TRUE(zwp && gtk) << "ferryd offers both primary selection globals";
  DeviceLog sink_log;
  zwp_primary_selection_device_v1_add_listener(
      zwp_primary_selection_device_manager_v1_get_device(zwp, sink_seat_), &kZwpDevice, &sink_log);
  focus_sink();
  SourceLog source_log;
  gtk_primary_selection_source* source = gtk_primary_selection_device_manager_create_source(gtk);
  gtk_primary_selection_source_add_listener(source, &kGtkSource, &source_log);
  gtk_primary_selection_source_offer(source, kMime);
  gtk_primary_selection_device_set_selection(
      gtk_primary_selection_device_manager_get_device(gtk, src_seat_), source, 0);
  wait_for_offer(sink_log);
  EXPECT_EQ(sink_log.events, (std::vector<std::string>{"selection null", "offer",
                                                       std::string("mime ") + kMime, "selection"}));
  std::string got = paste(
      [&](int fd) {
        zwp_primary_selection_offer_v1_receive(
            static_cast<zwp_primary_selection_offer_v1*>(sink_log.offer), kMime, fd);
      },
      source_log);
  EXPECT_EQ(got, kText);
  EXPECT_EQ(source_log.sends, 1);
  EXPECT_EQ(source_log.mime, kMime);
}

TEST_F(PrimarySelection, ZwpSelectionIsPastedByAGtkClient) {
  auto* gtk = static_cast<gtk_primary_selection_device_manager*>(
      sink_->bind(&gtk_primary_selection_device_manager_interface, 1));
  auto* zwp = static_cast<zwp_primary_selection_device_manager_v1*>(
      src_->bind(&zwp_primary_selection_device_manager_v1_interface, 1));
  ASSERT_TRUE(zwp && gtk);
  DeviceLog sink_log;
  gtk_primary_selection_device_add_listener(
      gtk_primary_selection_device_manager_get_device(gtk, sink_seat_), &kGtkDevice, &sink_log);
  focus_sink();
  SourceLog source_log;
  zwp_primary_selection_source_v1* source = zwp_primary_selection_device_manager_v1_create_source(zwp);
  zwp_primary_selection_source_v1_add_listener(source, &kZwpSource, &source_log);
  zwp_primary_selection_source_v1_offer(source, kMime);
  zwp_primary_selection_device_v1_set_selection(
      zwp_primary_selection_device_manager_v1_get_device(zwp, src_seat_), source, 0);
  wait_for_offer(sink_log);
  EXPECT_EQ(sink_log.events, (std::vector<std::string>{"selection null", "offer",
                                                       std::string("mime ") + kMime, "selection"}));
  std::string got = paste(
      [&](int fd) {
        gtk_primary_selection_offer_receive(static_cast<gtk_primary_selection_offer*>(sink_log.offer),
                                            kMime, fd);
      },
      source_log);
  EXPECT_EQ(got, kText);
  EXPECT_EQ(source_log.sends, 1);
}

}  // namespace
}  // namespace ferry::itest
