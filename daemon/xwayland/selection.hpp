#pragma once
// A selection bridge between X11 and Wayland clients, run by the WM (xwm.hpp): one for
// CLIPBOARD ↔ the seat's clipboard (wl_data_device), one for PRIMARY ↔ the seat's primary
// selection (zwp_primary_selection_v1).
//
// X → Wayland: XFixes reports a new owner of the bridge's X selection; the bridge asks it
// for TARGETS and makes the seat's selection of its kind an XSelectionSource offering their
// MIME types. A Wayland
// client's paste (send(mime, fd)) converts the selection into a property of the bridge's
// window and writes the bytes to the client's fd from the event loop.
// Wayland → X: when the seat's selection is a Wayland source, the bridge's window owns
// the X selection; an X client's SelectionRequest (TARGETS, UTF8_STRING, STRING, TEXT or a MIME
// atom) is answered by reading the source's pipe to its end and writing the property.
// Large transfers use ICCCM's INCR protocol both ways: an X owner that answers with an
// INCR property is read chunk by chunk (each PropertyNotify NewValue on the bridge's
// window, until a zero-length chunk); a Wayland source above kIncrThreshold bytes is given
// to the X requestor as INCR, one chunk per PropertyNotify Delete on its property. A
// transfer that makes no progress for kIncrTimeoutMs, or an X owner sending more than
// kMaxTransfer bytes, is abandoned with a log line (the Wayland reader sees its fd closed,
// the X requestor stops getting chunks).
//
// Main thread only. Owned by the Wm; dies with it.

#include <xcb/xcb.h>

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "core/seat.hpp"
#include "util/listener.hpp"
#include "util/unique_fd.hpp"

struct wl_event_source;

namespace ferry::xwayland {

class Wm;
class XSelectionSource;

class SelectionBridge {
 public:
  static constexpr size_t kIncrThreshold = 1 << 20;   // and the size of each INCR chunk
  static constexpr size_t kMaxTransfer = 256u << 20;  // from X, held in memory
  static constexpr int kIncrTimeoutMs = 10'000;

  SelectionBridge(Wm& wm, Seat::Selection which);
  ~SelectionBridge();
  SelectionBridge(const SelectionBridge&) = delete;
  SelectionBridge& operator=(const SelectionBridge&) = delete;

  // Handles the event if it is about this bridge's selection; false otherwise.
  bool handle(xcb_generic_event_t* ev);
  // A Wayland client asked the X selection for 'mime' (XSelectionSource::send).
  void request_from_x(const std::string& mime, UniqueFd fd);

 private:
  struct Outgoing;   // bytes from X on their way to a Wayland client's fd
  struct Incoming;   // bytes from a Wayland source on their way to an X requestor
  struct IncrReceive;  // an INCR transfer from the X owner in progress
  void owner_changed(xcb_window_t owner, xcb_timestamp_t time);
  void selection_notify(xcb_selection_notify_event_t* ev);
  void selection_request(xcb_selection_request_event_t* ev);
  void wayland_selection_changed();
  void start_next_conversion();
  void finish_incoming(Incoming* in, bool ok);
  void drop_incoming(Incoming* in);
  // Writes 'data' to a Wayland client's fd as it drains, then closes it.
  void write_to_wayland(UniqueFd to, std::string bytes);
  bool property_notify(xcb_property_notify_event_t* ev);
  void incr_chunk();                 // a NewValue of our property during an INCR receive
  void end_incr_receive(bool ok);    // then the next conversion
  void send_incr_chunk(Incoming* in);
  void refuse(const xcb_selection_request_event_t& req);
  xcb_atom_t atom(const std::string& name);
  std::string atom_name(xcb_atom_t a);
  Seat& seat() const;

  Wm& wm_;
  xcb_connection_t* conn_;
  Seat::Selection which_;
  const char* name_;  // for log lines
  xcb_window_t window_ = 0;
  uint8_t xfixes_event_base_ = 0;
  xcb_atom_t selection_, targets_, utf8_, string_, text_, incr_, property_;
  bool own_ = false;  // our window owns the X selection for a Wayland source
  std::unique_ptr<XSelectionSource> x_source_;  // the X owner, as the seat's selection
  // Pastes from X waiting to be converted, oldest first; the front one is in flight.
  struct Conversion {
    xcb_atom_t target;
    UniqueFd fd;
  };
  std::deque<Conversion> conversions_;
  bool converting_ = false;
  std::vector<std::unique_ptr<Outgoing>> outgoing_;
  std::vector<std::unique_ptr<Incoming>> incoming_;
  std::unique_ptr<IncrReceive> incr_receive_;
  Listener seat_selection_;
};

// Answers a SelectionRequest: the property written (or XCB_ATOM_NONE: refused).
void send_selection_notify(xcb_connection_t* conn, const xcb_selection_request_event_t& req,
                           xcb_atom_t property);

}  // namespace ferry::xwayland
