# Nova's functional harness runs Nova's services on eventlet. Patch before
# any test module imports kombu, ovs or threading-based code, as Nova's own
# functional package does, so every module sees the same (green) sleep,
# poll and threads whatever order the tests load in.
from nova import monkey_patch; monkey_patch.patch()  # noqa
