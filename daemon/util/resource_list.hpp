#pragma once
// An intrusive list of wl_resources linked through wl_resource_get_link(). A resource in
// such a list must be created with a destroy handler that calls unlink(resource), so a
// client that destroys it (or disconnects) never leaves a dangling entry. Movable.
// Main thread only.

#include <wayland-server-core.h>

#include <vector>

namespace ferry {

class ResourceList {
 public:
  ResourceList() { wl_list_init(&head_); }
  ResourceList(ResourceList&& o) noexcept : ResourceList() { append(o); }
  ResourceList& operator=(ResourceList&& o) noexcept {
    if (this != &o) {
      clear();
      append(o);
    }
    return *this;
  }
  ResourceList(const ResourceList&) = delete;
  ResourceList& operator=(const ResourceList&) = delete;
  ~ResourceList() { clear(); }

  // For destroy handlers of resources kept in a ResourceList (also safe if unlisted, as long
  // as init() was called on creation).
  static void init(wl_resource* r) { wl_list_init(wl_resource_get_link(r)); }
  static void unlink(wl_resource* r) {
    wl_list_remove(wl_resource_get_link(r));
    wl_list_init(wl_resource_get_link(r));
  }

  void add(wl_resource* r) {
    unlink(r);
    wl_list_insert(head_.prev, wl_resource_get_link(r));
  }
  // Moves all of o's entries to the end of this list.
  void append(ResourceList& o) {
    if (wl_list_empty(&o.head_)) return;
    wl_list_insert_list(head_.prev, &o.head_);
    wl_list_init(&o.head_);
  }
  bool empty() const { return wl_list_empty(&head_); }
  // Takes all entries out (unlinked) for the caller to send/destroy.
  std::vector<wl_resource*> take() {
    std::vector<wl_resource*> out;
    wl_list* pos = head_.next;
    while (pos != &head_) {
      wl_list* next = pos->next;
      wl_resource* r = wl_resource_from_link(pos);
      wl_list_init(pos);
      out.push_back(r);
      pos = next;
    }
    wl_list_init(&head_);
    return out;
  }
  // Unlinks every entry without touching the resources.
  void clear() { take(); }

 private:
  wl_list head_;
};

}  // namespace ferry
