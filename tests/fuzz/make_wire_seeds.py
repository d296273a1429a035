#!/usr/bin/env python3
"""Writes fuzz-wire's hand-written seed programs (tests/fuzz/corpus/wire/) in the byte
encoding tests/fuzz/fuzz_wire.cpp interprets. Each seed is a short well-formed client:
shm surface, xdg toplevel, subsurfaces, popup, viewport + screencopy, data device.

    make_wire_seeds.py OUT_DIR WAYLAND_XML PROTOCOL_XML...   (the XML in meson's order)

The XML list must be the one tests/fuzz/meson.build gives gen_wire_table.py (its order
fixes the interface numbers the programs use); from a configured build-asan (-Dfuzz=true):
    cd tests/fuzz && python3 make_wire_seeds.py corpus/wire $(sed -n \
      's|.*gen_wire_table.py tests/fuzz/wire_table.cpp ||p' ../../build-asan/build.ninja)
A seed that no longer does what its name says shows up with FUZZ_WIRE_TRACE=1 (a protocol
error, or requests on the wrong objects).
"""
import os
import struct
import sys

from gen_wire_table import load_interfaces

OP_BIND, OP_REQUEST = 0, 6


class Program:
    """Follows the fuzzer's object list (ids in creation order) to encode object choices."""

    def __init__(self, interfaces):
        self.ifaces = interfaces
        self.index = {i.get('name'): n for n, i in enumerate(interfaces)}
        self.ids = [(1, 'wl_display'), (2, 'wl_registry')]  # get_registry precedes the program
        self.next_id = 3
        self.out = bytearray()

    def _new(self, iface):
        obj = self.next_id
        self.next_id += 1
        self.ids.append((obj, iface))
        return obj

    def bind(self, iface):
        self.out += bytes([OP_BIND, self.index[iface], 0])
        return self._new(iface)

    def request(self, obj, name, *args):
        """args: ('obj', id) | ('new',) | int | ('recent', n) | ('fd', pages) | ('str', text);
        a fixed argument is given in whole units."""
        pos = [o for o, _ in self.ids].index(obj)
        iface_name = self.ids[pos][1]
        iface = self.ifaces[self.index[iface_name]]
        requests = iface.findall('request')
        opcode = [r.get('name') for r in requests].index(name)
        self.out += bytes([OP_REQUEST, pos, opcode])
        xml_args = requests[opcode].findall('arg')
        assert len(xml_args) == len(args), (iface_name, name)
        created = []
        for spec, value in zip(xml_args, args):
            t = spec.get('type')
            if t in ('int', 'uint'):
                if spec.get('enum') is not None:
                    self.out += b'\xff'  # not an enum pick: an explicit value follows
                if isinstance(value, tuple):  # ('recent', n): the n-th latest value in events
                    self.out += bytes([8, value[1]])
                else:
                    self.out += bytes([6]) + struct.pack('<I', value & 0xffffffff)
            elif t == 'fixed':
                self.out += bytes([1, 6]) + struct.pack('<I', value & 0xffffffff)
            elif t == 'object':
                target = spec.get('interface')
                same = [o for o, i in self.ids if i == target]
                self.out += bytes([0, same.index(value[1])])
            elif t == 'new_id':
                self.out += bytes([0])
                created.append(self._new(spec.get('interface')))
            elif t == 'fd':
                self.out += bytes([0, 1, value[1]])  # a memfd of value[1] pages
            elif t == 'string':
                text = value[1].encode()
                self.out += bytes([16, len(text)]) + text
            else:
                raise ValueError(t)
        if requests[opcode].get('type') == 'destructor':
            del self.ids[pos]
        return created[0] if len(created) == 1 else created


def shm_buffer(p, shm, w, h):
    pool = p.request(shm, 'create_pool', ('new',), ('fd', 16), 16 * 4096)
    return p.request(pool, 'create_buffer', ('new',), 0, w, h, w * 4, 1)  # xrgb8888


def toplevel(p, comp, wm, shm=None):
    """An xdg_toplevel, configured and acked; mapped with a buffer when 'shm' is given."""
    surface = p.request(comp, 'create_surface', ('new',))
    xdg = p.request(wm, 'get_xdg_surface', ('new',), ('obj', surface))
    top = p.request(xdg, 'get_toplevel', ('new',))
    p.request(surface, 'commit')
    p.request(xdg, 'ack_configure', ('recent', 0))  # xdg_surface.configure's serial
    if shm is not None:
        buf = shm_buffer(p, shm, 32, 24)
        p.request(surface, 'attach', ('obj', buf), 0, 0)
        p.request(surface, 'commit')
    return surface, xdg, top


def seed_shm_surface(p):
    comp, shm = p.bind('wl_compositor'), p.bind('wl_shm')
    buf = shm_buffer(p, shm, 16, 16)
    surface = p.request(comp, 'create_surface', ('new',))
    p.request(surface, 'attach', ('obj', buf), 0, 0)
    p.request(surface, 'damage', 0, 0, 16, 16)
    p.request(surface, 'commit')


def seed_xdg_toplevel(p):
    comp, shm, wm = p.bind('wl_compositor'), p.bind('wl_shm'), p.bind('xdg_wm_base')
    _, _, top = toplevel(p, comp, wm, shm)
    p.request(top, 'set_title', ('str', 'seed'))
    p.request(top, 'set_maximized')


def seed_subsurfaces(p):
    comp, shm = p.bind('wl_compositor'), p.bind('wl_shm')
    sub = p.bind('wl_subcompositor')
    wm = p.bind('xdg_wm_base')
    parent, _, _ = toplevel(p, comp, wm, shm)
    child = p.request(comp, 'create_surface', ('new',))
    grandchild = p.request(comp, 'create_surface', ('new',))
    s1 = p.request(sub, 'get_subsurface', ('new',), ('obj', child), ('obj', parent))
    s2 = p.request(sub, 'get_subsurface', ('new',), ('obj', grandchild), ('obj', child))
    p.request(s1, 'set_position', 4, 4)
    p.request(s2, 'set_desync')
    buf = shm_buffer(p, shm, 8, 8)
    p.request(grandchild, 'attach', ('obj', buf), 0, 0)
    p.request(grandchild, 'commit')
    p.request(child, 'commit')
    p.request(parent, 'commit')
    p.request(s1, 'place_below', ('obj', parent))


def seed_popup(p):
    comp, wm, shm = p.bind('wl_compositor'), p.bind('xdg_wm_base'), p.bind('wl_shm')
    _, parent_xdg, _ = toplevel(p, comp, wm, shm)
    pos = p.request(wm, 'create_positioner', ('new',))
    p.request(pos, 'set_size', 10, 10)
    p.request(pos, 'set_anchor_rect', 0, 0, 5, 5)
    surface = p.request(comp, 'create_surface', ('new',))
    xdg = p.request(wm, 'get_xdg_surface', ('new',), ('obj', surface))
    p.request(xdg, 'get_popup', ('new',), ('obj', parent_xdg), ('obj', pos))
    p.request(surface, 'commit')
    p.request(xdg, 'ack_configure', ('recent', 0))
    buf = shm_buffer(p, shm, 10, 10)
    p.request(surface, 'attach', ('obj', buf), 0, 0)
    p.request(surface, 'commit')


def seed_viewport_screencopy(p):
    comp, shm = p.bind('wl_compositor'), p.bind('wl_shm')
    vp, out = p.bind('wp_viewporter'), p.bind('wl_output')
    copy = p.bind('zwlr_screencopy_manager_v1')
    surface = p.request(comp, 'create_surface', ('new',))
    view = p.request(vp, 'get_viewport', ('new',), ('obj', surface))
    p.request(view, 'set_source', 0, 0, 8, 8)
    p.request(view, 'set_destination', 20, 20)
    buf = shm_buffer(p, shm, 64, 48)
    p.request(surface, 'attach', ('obj', buf), 0, 0)
    p.request(surface, 'commit')
    frame = p.request(copy, 'capture_output', ('new',), 0, ('obj', out))
    p.request(frame, 'copy', ('obj', buf))


def seed_data_device(p):
    ddm, seat = p.bind('wl_data_device_manager'), p.bind('wl_seat')
    source = p.request(ddm, 'create_data_source', ('new',))
    p.request(source, 'offer', ('str', 'text/plain'))
    device = p.request(ddm, 'get_data_device', ('new',), ('obj', seat))
    p.request(device, 'set_selection', ('obj', source), 0)
    p.request(seat, 'get_keyboard', ('new',))
    p.request(seat, 'get_pointer', ('new',))


def main():
    out_dir, xmls = sys.argv[1], sys.argv[2:]
    interfaces = load_interfaces(xmls)
    os.makedirs(out_dir, exist_ok=True)
    for name, build in [('shm-surface', seed_shm_surface), ('xdg-toplevel', seed_xdg_toplevel),
                        ('subsurfaces', seed_subsurfaces), ('popup', seed_popup),
                        ('viewport-screencopy', seed_viewport_screencopy),
                        ('data-device', seed_data_device)]:
        p = Program(interfaces)
        build(p)
        with open(os.path.join(out_dir, name), 'wb') as f:
            f.write(p.out)


if __name__ == '__main__':
    main()
