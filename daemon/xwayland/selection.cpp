#include "xwayland/selection.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <wayland-server-core.h>
#include <xcb/xfixes.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/limits.hpp"
#include "core/server.hpp"
#include "util/log.hpp"
#include "xwayland/xwm.hpp"

namespace ferry::xwayland {

namespace {
constexpr const char* kUtf8Mime = "text/plain;charset=utf-8";
// Atoms of an owner's TARGETS read at most (twice the types bridged: some are not types).
constexpr uint32_t kTargetsRead = 2 * limits::kMaxMimeTypesPerSource;
constexpr const char* kTextMime = "text/plain";
}  // namespace

// The X owner of CLIPBOARD or PRIMARY as the seat's selection of that kind.
class XSelectionSource final : public SelectionSource {
 public:
  XSelectionSource(SelectionBridge& bridge, std::vector<std::string> mimes)
      : bridge_(bridge), mimes_(std::move(mimes)) {}
  const std::vector<std::string>& mime_types() const override { return mimes_; }
  void send(const std::string& mime_type, UniqueFd fd) override {
    bridge_.request_from_x(mime_type, std::move(fd));
  }
  void cancel() override {}  // the X owner keeps its selection; X learns of ours separately

 private:
  SelectionBridge& bridge_;
  std::vector<std::string> mimes_;
};

// X bytes written to a Wayland client's fd as it drains (non-blocking).
struct SelectionBridge::Outgoing {
  SelectionBridge* bridge;
  UniqueFd fd;
  std::string data;
  size_t written = 0;
  wl_event_source* source = nullptr;
  ~Outgoing() {
    if (source) wl_event_source_remove(source);
  }
};

// A Wayland source's bytes read until EOF, then given to the X requestor.
struct SelectionBridge::Incoming {
  SelectionBridge* bridge;
  xcb_selection_request_event_t request;
  xcb_atom_t type;  // property type to write (UTF8_STRING, STRING or the MIME atom)
  UniqueFd fd;
  std::string data;
  wl_event_source* source = nullptr;
  // INCR: bytes given so far, and the watchdog that abandons a requestor that stops.
  bool incr = false;
  size_t sent = 0;
  wl_event_source* timer = nullptr;
  ~Incoming() {
    if (source) wl_event_source_remove(source);
    if (timer) wl_event_source_remove(timer);
  }
};

struct SelectionBridge::IncrReceive {
  UniqueFd fd;
  std::string data;
  int chunks = 0;
  wl_event_source* timer = nullptr;
  ~IncrReceive() {
    if (timer) wl_event_source_remove(timer);
  }
};

void send_selection_notify(xcb_connection_t* conn, const xcb_selection_request_event_t& req,
                           xcb_atom_t property) {
  xcb_selection_notify_event_t n{};
  n.response_type = XCB_SELECTION_NOTIFY;
  n.time = req.time;
  n.requestor = req.requestor;
  n.selection = req.selection;
  n.target = req.target;
  n.property = property;
  xcb_send_event(conn, 0, req.requestor, XCB_EVENT_MASK_NO_EVENT, reinterpret_cast<const char*>(&n));
}

SelectionBridge::SelectionBridge(Wm& wm, Seat::Selection which)
    : wm_(wm), conn_(wm.conn()), which_(which),
      name_(which == Seat::Selection::clipboard ? "clipboard" : "primary selection") {
  selection_ = which == Seat::Selection::clipboard ? atom("CLIPBOARD") : xcb_atom_t(XCB_ATOM_PRIMARY);
  targets_ = atom("TARGETS");
  utf8_ = atom("UTF8_STRING");
  string_ = XCB_ATOM_STRING;
  text_ = atom("TEXT");
  incr_ = atom("INCR");
  property_ = atom("_FERRY_SELECTION");

  window_ = xcb_generate_id(conn_);
  uint32_t mask = XCB_EVENT_MASK_PROPERTY_CHANGE;
  xcb_create_window(conn_, XCB_COPY_FROM_PARENT, window_, wm_.root(), -10, -10, 1, 1, 0,
                    XCB_WINDOW_CLASS_INPUT_ONLY, XCB_COPY_FROM_PARENT, XCB_CW_EVENT_MASK, &mask);
  const xcb_query_extension_reply_t* ext = xcb_get_extension_data(conn_, &xcb_xfixes_id);
  if (ext && ext->present) {
    xfixes_event_base_ = ext->first_event;
    std::free(xcb_xfixes_query_version_reply(conn_, xcb_xfixes_query_version(conn_, 5, 0), nullptr));
    xcb_xfixes_select_selection_input(conn_, window_, selection_,
                                      XCB_XFIXES_SELECTION_EVENT_MASK_SET_SELECTION_OWNER |
                                          XCB_XFIXES_SELECTION_EVENT_MASK_SELECTION_WINDOW_DESTROY |
                                          XCB_XFIXES_SELECTION_EVENT_MASK_SELECTION_CLIENT_CLOSE);
  } else {
    log_warn("xwayland: no XFixes: X11 %s owners are not seen by Wayland clients", name_);
  }
  seat_selection_.connect(seat().selection_changed(which_),
                          [this](void*) { wayland_selection_changed(); });
  // An X client that took the selection before XFixes reported to us (after a WM restart).
  if (xcb_get_selection_owner_reply_t* r =
          xcb_get_selection_owner_reply(conn_, xcb_get_selection_owner(conn_, selection_), nullptr)) {
    xcb_window_t owner = r->owner;
    std::free(r);
    if (owner != XCB_WINDOW_NONE) {
      owner_changed(owner, XCB_CURRENT_TIME);
      return;
    }
  }
  // A Wayland selection that exists already is offered to X at once.
  wayland_selection_changed();
}

SelectionBridge::~SelectionBridge() {
  seat_selection_.disconnect();
  outgoing_.clear();
  incoming_.clear();
  // The seat forgets the source through its on_destroy.
  x_source_.reset();
}

xcb_atom_t SelectionBridge::atom(const std::string& name) {
  xcb_intern_atom_reply_t* r = xcb_intern_atom_reply(
      conn_, xcb_intern_atom(conn_, 0, uint16_t(name.size()), name.c_str()), nullptr);
  xcb_atom_t a = r ? r->atom : xcb_atom_t(XCB_ATOM_NONE);
  std::free(r);
  return a;
}

Seat& SelectionBridge::seat() const { return wm_.server().seat(); }

std::string SelectionBridge::atom_name(xcb_atom_t a) {
  xcb_get_atom_name_reply_t* r = xcb_get_atom_name_reply(conn_, xcb_get_atom_name(conn_, a), nullptr);
  if (!r) return "";
  std::string name(xcb_get_atom_name_name(r), size_t(xcb_get_atom_name_name_length(r)));
  std::free(r);
  return name;
}

bool SelectionBridge::handle(xcb_generic_event_t* ev) {
  uint8_t type = ev->response_type & ~0x80;
  if (xfixes_event_base_ && type == xfixes_event_base_ + XCB_XFIXES_SELECTION_NOTIFY) {
    auto* e = reinterpret_cast<xcb_xfixes_selection_notify_event_t*>(ev);
    if (e->selection != selection_) return false;
    owner_changed(e->owner, e->selection_timestamp);
    return true;
  }
  if (type == XCB_SELECTION_NOTIFY) {
    auto* e = reinterpret_cast<xcb_selection_notify_event_t*>(ev);
    if (e->selection != selection_) return false;
    selection_notify(e);
    return true;
  }
  if (type == XCB_SELECTION_REQUEST) {
    auto* e = reinterpret_cast<xcb_selection_request_event_t*>(ev);
    if (e->selection != selection_) return false;
    selection_request(e);
    return true;
  }
  if (type == XCB_PROPERTY_NOTIFY)
    return property_notify(reinterpret_cast<xcb_property_notify_event_t*>(ev));
  return false;
}

bool SelectionBridge::property_notify(xcb_property_notify_event_t* ev) {
  if (ev->window == window_) {
    if (ev->atom == property_ && ev->state == XCB_PROPERTY_NEW_VALUE && incr_receive_) incr_chunk();
    return true;
  }
  // The requestor of an INCR send deleted the last chunk: the next one.
  if (ev->state != XCB_PROPERTY_DELETE) return false;
  for (auto& in : incoming_)
    if (in->incr && in->request.requestor == ev->window && in->request.property == ev->atom) {
      send_incr_chunk(in.get());
      return true;
    }
  return false;
}

// ---- X → Wayland ----

void SelectionBridge::owner_changed(xcb_window_t owner, xcb_timestamp_t time) {
  if (owner == window_) return;  // ours, for a Wayland source
  own_ = false;
  if (owner == XCB_WINDOW_NONE) {
    if (x_source_ && seat().selection(which_) == x_source_.get())
      seat().set_selection(which_, nullptr, wm_.server().next_serial());
    x_source_.reset();
    return;
  }
  // What can it give? The answer (SelectionNotify for TARGETS) makes the Wayland offer.
  xcb_convert_selection(conn_, window_, selection_, targets_, targets_, time);
  wm_.flush();
}

void SelectionBridge::selection_notify(xcb_selection_notify_event_t* ev) {
  if (ev->selection != selection_ || ev->requestor != window_) return;
  if (ev->target == targets_) {
    if (ev->property == XCB_ATOM_NONE) return;
    xcb_get_property_reply_t* r = xcb_get_property_reply(
        conn_, xcb_get_property(conn_, 1, window_, targets_, XCB_ATOM_ATOM, 0, kTargetsRead), nullptr);
    if (!r) return;
    // The same limits as a Wayland data source's offer (core/limits.hpp): each atom's name
    // is a round trip to the X server, and every type is announced to the focused client.
    std::vector<std::string> mimes;
    auto* atoms = static_cast<xcb_atom_t*>(xcb_get_property_value(r));
    int n = xcb_get_property_value_length(r) / 4;
    for (int i = 0; i < n && mimes.size() < limits::kMaxMimeTypesPerSource; ++i) {
      std::string mime;
      if (atoms[i] == utf8_) mime = kUtf8Mime;
      else if (atoms[i] == string_ || atoms[i] == text_) mime = kTextMime;
      else if (std::string name = atom_name(atoms[i]); name.find('/') != std::string::npos) mime = name;
      if (!mime.empty() && mime.size() <= limits::kMaxMimeTypeBytes &&
          std::find(mimes.begin(), mimes.end(), mime) == mimes.end())
        mimes.push_back(mime);
    }
    if (n == int(kTargetsRead) || mimes.size() == limits::kMaxMimeTypesPerSource)
      log_info("xwayland: the X selection owner offers %d or more targets; the first %zu types "
               "are bridged", n, mimes.size());
    std::free(r);
    if (mimes.empty()) return;
    // x_source_ is the new one before the seat announces it (wayland_selection_changed
    // must recognise it as X's own); the previous one goes after the seat let go of it.
    std::unique_ptr<XSelectionSource> previous = std::move(x_source_);
    x_source_ = std::make_unique<XSelectionSource>(*this, std::move(mimes));
    seat().set_selection(which_, x_source_.get(), wm_.server().next_serial());
    return;
  }
  // A conversion for a Wayland paste (the front of the queue).
  if (!converting_ || conversions_.empty()) return;
  Conversion conv = std::move(conversions_.front());
  conversions_.pop_front();
  converting_ = false;
  if (ev->property != XCB_ATOM_NONE) {
    xcb_get_property_reply_t* r = xcb_get_property_reply(
        conn_, xcb_get_property(conn_, 1, window_, property_, XCB_GET_PROPERTY_TYPE_ANY, 0, 0x1fffffff),
        nullptr);
    if (r && r->type == incr_) {
      // The owner sends in chunks; reading (and deleting) the INCR property above told it
      // to start. The queue waits until the zero-length chunk.
      std::free(r);
      incr_receive_ = std::make_unique<IncrReceive>();
      incr_receive_->fd = std::move(conv.fd);
      incr_receive_->timer = wl_event_loop_add_timer(
          wm_.server().loop(),
          [](void* data) {
            auto* self = static_cast<SelectionBridge*>(data);
            log_warn("xwayland: %s: the X owner stopped sending (INCR, %zu bytes so far); "
                     "paste abandoned", self->name_, self->incr_receive_->data.size());
            self->end_incr_receive(false);
            return 0;
          },
          this);
      wl_event_source_timer_update(incr_receive_->timer, kIncrTimeoutMs);
      converting_ = true;
      return;
    }
    if (r)
      write_to_wayland(std::move(conv.fd),
                       std::string(static_cast<const char*>(xcb_get_property_value(r)),
                                   size_t(xcb_get_property_value_length(r))));
    std::free(r);
  }
  start_next_conversion();
}

void SelectionBridge::incr_chunk() {
  xcb_get_property_reply_t* r = xcb_get_property_reply(
      conn_, xcb_get_property(conn_, 1, window_, property_, XCB_GET_PROPERTY_TYPE_ANY, 0, 0x1fffffff),
      nullptr);
  if (!r) return;
  size_t n = size_t(xcb_get_property_value_length(r));
  if (n == 0 && r->type == XCB_ATOM_NONE) {  // our own delete, or nothing there yet
    std::free(r);
    return;
  }
  IncrReceive& in = *incr_receive_;
  if (in.data.size() + n > kMaxTransfer) {
    std::free(r);
    log_warn("xwayland: %s: the X owner sends more than %zu MiB (INCR); paste abandoned", name_,
             kMaxTransfer >> 20);
    end_incr_receive(false);
    return;
  }
  in.data.append(static_cast<const char*>(xcb_get_property_value(r)), n);
  in.chunks += n > 0;
  std::free(r);
  wm_.flush();  // the delete asks for the next chunk
  if (n == 0) end_incr_receive(true);
  else wl_event_source_timer_update(in.timer, kIncrTimeoutMs);
}

void SelectionBridge::end_incr_receive(bool ok) {
  std::unique_ptr<IncrReceive> in = std::move(incr_receive_);
  if (ok) {
    log_info("xwayland: %s: %zu bytes from X in %d INCR chunks", name_, in->data.size(), in->chunks);
    write_to_wayland(std::move(in->fd), std::move(in->data));
  }
  // Else the fd closes: the reader gets what a vanished owner gives, nothing more.
  converting_ = false;
  start_next_conversion();
}

void SelectionBridge::write_to_wayland(UniqueFd to, std::string bytes) {
  auto out = std::make_unique<Outgoing>();
  out->bridge = this;
  out->fd = std::move(to);
  out->data = std::move(bytes);
  ::fcntl(out->fd.get(), F_SETFL, ::fcntl(out->fd.get(), F_GETFL) | O_NONBLOCK);
  out->source = wl_event_loop_add_fd(
      wm_.server().loop(), out->fd.get(), WL_EVENT_WRITABLE,
      [](int fd, uint32_t mask, void* data) {
        auto* o = static_cast<Outgoing*>(data);
        while (o->written < o->data.size() && !(mask & (WL_EVENT_HANGUP | WL_EVENT_ERROR))) {
          ssize_t n = ::write(fd, o->data.data() + o->written, o->data.size() - o->written);
          if (n < 0 && errno == EAGAIN) return 0;
          if (n <= 0) break;
          o->written += size_t(n);
        }
        // Done (or the reader left): closing the fd ends the paste.
        auto& list = o->bridge->outgoing_;
        list.erase(std::remove_if(list.begin(), list.end(),
                                  [o](const std::unique_ptr<Outgoing>& p) { return p.get() == o; }),
                   list.end());
        return 0;
      },
      out.get());
  outgoing_.push_back(std::move(out));
}

void SelectionBridge::request_from_x(const std::string& mime, UniqueFd fd) {
  xcb_atom_t target = mime == kUtf8Mime ? utf8_ : mime == kTextMime ? string_ : atom(mime);
  conversions_.push_back({target, std::move(fd)});
  start_next_conversion();
}

void SelectionBridge::start_next_conversion() {
  if (converting_ || conversions_.empty()) return;
  converting_ = true;
  xcb_convert_selection(conn_, window_, selection_, conversions_.front().target, property_,
                        XCB_CURRENT_TIME);
  wm_.flush();
}

// ---- Wayland → X ----

void SelectionBridge::wayland_selection_changed() {
  SelectionSource* source = seat().selection(which_);
  if (source && source == x_source_.get()) return;
  if (!source) {
    if (own_) {
      xcb_set_selection_owner(conn_, XCB_WINDOW_NONE, selection_, XCB_CURRENT_TIME);
      own_ = false;
    }
  } else {
    // A Wayland client's selection: X clients now ask us.
    x_source_.reset();
    xcb_set_selection_owner(conn_, window_, selection_, XCB_CURRENT_TIME);
    own_ = true;
  }
  wm_.flush();
}

void SelectionBridge::refuse(const xcb_selection_request_event_t& req) {
  send_selection_notify(conn_, req, XCB_ATOM_NONE);
  wm_.flush();
}

void SelectionBridge::selection_request(xcb_selection_request_event_t* ev) {
  SelectionSource* source = seat().selection(which_);
  if (ev->selection != selection_ || !own_ || !source || source == x_source_.get()) {
    refuse(*ev);
    return;
  }
  // ICCCM: an old client may leave the property None; then the target names it.
  xcb_selection_request_event_t req = *ev;
  if (req.property == XCB_ATOM_NONE) req.property = req.target;
  const std::vector<std::string>& mimes = source->mime_types();
  auto has = [&](const std::string& m) { return std::find(mimes.begin(), mimes.end(), m) != mimes.end(); };
  if (req.target == targets_) {
    std::vector<xcb_atom_t> targets = {targets_};
    if (has(kUtf8Mime) || has(kTextMime)) targets.insert(targets.end(), {utf8_, string_, text_});
    for (const std::string& m : mimes)
      if (m != kUtf8Mime && m != kTextMime) targets.push_back(atom(m));
    // Sources often offer "UTF8_STRING" or "TEXT" as MIME names too: list each once.
    std::vector<xcb_atom_t> unique;
    for (xcb_atom_t a : targets)
      if (std::find(unique.begin(), unique.end(), a) == unique.end()) unique.push_back(a);
    targets = std::move(unique);
    xcb_change_property(conn_, XCB_PROP_MODE_REPLACE, req.requestor, req.property, XCB_ATOM_ATOM,
                        32, uint32_t(targets.size()), targets.data());
    send_selection_notify(conn_, req, req.property);
    wm_.flush();
    return;
  }
  std::string mime;
  xcb_atom_t type = req.target;
  if (req.target == utf8_ || req.target == text_) {
    mime = has(kUtf8Mime) ? kUtf8Mime : has(kTextMime) ? kTextMime : "";
    type = utf8_;
  } else if (req.target == string_) {
    mime = has(kTextMime) ? kTextMime : has(kUtf8Mime) ? kUtf8Mime : "";
  } else if (std::string name = atom_name(req.target); has(name)) {
    mime = name;
  }
  int fds[2];
  if (mime.empty() || ::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    refuse(req);
    return;
  }
  auto in = std::make_unique<Incoming>();
  in->bridge = this;
  in->request = req;
  in->type = type;
  in->fd.reset(fds[0]);
  source->send(mime, UniqueFd(fds[1]));
  in->source = wl_event_loop_add_fd(
      wm_.server().loop(), in->fd.get(), WL_EVENT_READABLE,
      [](int fd, uint32_t, void* data) {
        auto* i = static_cast<Incoming*>(data);
        char buf[65536];
        for (;;) {
          ssize_t n = ::read(fd, buf, sizeof buf);
          if (n > 0) {
            i->data.append(buf, size_t(n));
            continue;
          }
          if (n < 0 && errno == EAGAIN) return 0;
          i->bridge->finish_incoming(i, n == 0);
          return 0;
        }
      },
      in.get());
  incoming_.push_back(std::move(in));
}

void SelectionBridge::finish_incoming(Incoming* in, bool ok) {
  const xcb_selection_request_event_t& req = in->request;
  if (!ok) {
    refuse(req);
    drop_incoming(in);
    return;
  }
  if (in->data.size() <= kIncrThreshold) {
    xcb_change_property(conn_, XCB_PROP_MODE_REPLACE, req.requestor, req.property, in->type, 8,
                        uint32_t(in->data.size()), in->data.data());
    send_selection_notify(conn_, req, req.property);
    wm_.flush();
    drop_incoming(in);
    return;
  }
  // INCR (ICCCM 2.7.2): an INCR property with the size; each time the requestor deletes
  // the property, the next chunk; a zero-length chunk ends it. We hear of the deletes
  // through PropertyChange on its window, added to whatever we select there already.
  if (in->source) wl_event_source_remove(in->source);
  in->source = nullptr;
  in->fd.reset();
  uint32_t mask = XCB_EVENT_MASK_PROPERTY_CHANGE;
  if (xcb_get_window_attributes_reply_t* a = xcb_get_window_attributes_reply(
          conn_, xcb_get_window_attributes(conn_, req.requestor), nullptr)) {
    mask |= a->your_event_mask;
    std::free(a);
  }
  xcb_change_window_attributes(conn_, req.requestor, XCB_CW_EVENT_MASK, &mask);
  uint32_t size = uint32_t(std::min<size_t>(in->data.size(), UINT32_MAX));
  xcb_change_property(conn_, XCB_PROP_MODE_REPLACE, req.requestor, req.property, incr_, 32, 1, &size);
  send_selection_notify(conn_, req, req.property);
  wm_.flush();
  in->incr = true;
  in->timer = wl_event_loop_add_timer(
      wm_.server().loop(),
      [](void* data) {
        auto* i = static_cast<Incoming*>(data);
        log_warn("xwayland: %s: the X requestor stopped reading (INCR, %zu of %zu bytes); "
                 "transfer abandoned", i->bridge->name_, i->sent, i->data.size());
        i->bridge->drop_incoming(i);
        return 0;
      },
      in);
  wl_event_source_timer_update(in->timer, kIncrTimeoutMs);
}

void SelectionBridge::send_incr_chunk(Incoming* in) {
  const xcb_selection_request_event_t& req = in->request;
  size_t n = std::min(kIncrThreshold, in->data.size() - in->sent);
  xcb_change_property(conn_, XCB_PROP_MODE_REPLACE, req.requestor, req.property, in->type, 8,
                      uint32_t(n), in->data.data() + in->sent);
  wm_.flush();
  in->sent += n;
  if (n == 0) {  // the terminating empty chunk is out
    log_info("xwayland: %s: %zu bytes to X in %zu INCR chunks", name_, in->data.size(),
             (in->data.size() + kIncrThreshold - 1) / kIncrThreshold);
    drop_incoming(in);
  }
  else wl_event_source_timer_update(in->timer, kIncrTimeoutMs);
}

void SelectionBridge::drop_incoming(Incoming* in) {
  incoming_.erase(std::remove_if(incoming_.begin(), incoming_.end(),
                                 [in](const std::unique_ptr<Incoming>& p) { return p.get() == in; }),
                  incoming_.end());
}

}  // namespace ferry::xwayland
