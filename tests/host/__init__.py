"""Tests on a compute host that looks like a CAT host (resq_fake.host):
a real libvirtd in a private mount namespace, real QEMU guests, the FUSE
resctrl file system. Unlike tests/functional, nothing here runs Nova's
services, so nothing is patched by eventlet: the agent's libvirt event
loop is a native thread, as in resq-agent itself (under eventlet's
patched threading, virEventRunDefaultImpl would block every greenthread).
"""
