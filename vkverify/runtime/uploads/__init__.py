"""Staged uploads: data into DEVICE_LOCAL memory through host staging slots, or
through the map where the device has a large host-visible window.

    with Runtime() as rt, Uploader(rt) as up:
        up.upload("W0", 0, weights)                # any size, streamed through the slots
        up.upload_file("W1", 0, "model.safetensors", start, n)  # read straight into the slots
        staging = up.staging_array(n)              # host memory the copy reads straight from:
        dequantize(q, out=staging); up.upload("W4", 0, staging)  # no host copy (returns once read)
        up.commit([("W2", 0, a), ("W3", 0, b)])    # one submit: all or nothing
        up.deferred("W5", 0, c)                    # copied at the head of the next command buffer reading W5
        up.finish()                                # landed: any queue may read
        up.report()                                # bytes staged, copies, submits, how the slots were sized
        check(up.stream())                         # everything it did, recorded

    Uploader(EngineDevice(physical, device, family, queue, engine_lock))  # a device the engine owns

A destination is a stream buffer: an alias of an arena block, created by the
first upload that names it, bound in the runtime's command buffers by its id.
On a Runtime the uploader records into the runtime's stream (thread `thread`), so
the program's readers and the uploads are checked together; on an engine's device
into a stream of its own.

The protocol, as LLM engines' Vulkan backends run it without Resizable BAR: staged
when the device-local host-visible heap is under a quarter of the largest device-local
heap; destinations DEVICE_LOCAL, shared CONCURRENT by the queue families that use
them, zero-filled before first use (a fresh block can hold another run's bytes); the
copies on a transfer-only family, else a spare queue, else the main queue under the
lock every submit takes, and no fence wait under that lock; two 16 MiB slots in one
persistently mapped staging buffer, a command buffer and a fence each, copy offsets
rounded up to 256 bytes, a landing barrier transfer_write -> memory_read|memory_write
before each submit; memory the device may still read is kept alive until its fence;
every fault point injectable, a failure failing that upload only.

One concept a module: placement (staged or mapped, the queue), arena (destinations),
slots (the slot ring, its barriers and fence waits), sizing (slot count and size,
measured), hostio (memcpy and file reads into staging memory), deferred (copies the
runtime's submits carry), faults, recording (the stream), site (a Runtime's device or
an engine's), uploader (the API).

Throughput: each staged byte crosses host memory three times (read from the
source, written into a slot, read by the copy); on the H200's host that, not PCIe,
is the bound, and a host copy running beside a device copy caps it near 0.8 of one
raw vkCmdCopyBuffer (benchmarks/uploads.py prints that ceiling beside each path; 1 GiB
on the H200, eight runs: staged 0.96-1.02 of it, from a file 0.81-1.02, a page-cache
read being about 12% slower than a memcpy there). The host copy threads leave two cores to the
submitting thread and the driver (hostio.default_threads). A source produced in place
in a staging_array() crosses host memory once less; upload_file() with O_DIRECT has the
disk write the slot; buffered, the page cache is read once.

Environment: VKVERIFY_STAGED=1|0 forces or forbids staging;
VKVERIFY_HOST_VISIBLE_CAP_MB=N caps the host-visible heap the placement rule
sees; VKVERIFY_FAULT=<point>[:n] fails the n-th hit of a point (FAULT_POINTS).
"""

from .deferred import reads_of
from .faults import FAULT_POINTS, Faults
from .placement import UPLOAD_QUEUE, choose_queue, memory_layout, staged
from .site import EngineDevice
from .sizing import SlotPlan, plan_slots
from .uploader import Uploader, UploadReport, as_bytes

__all__ = ["FAULT_POINTS", "UPLOAD_QUEUE", "EngineDevice", "Faults", "SlotPlan", "UploadReport", "Uploader",
           "as_bytes", "choose_queue", "memory_layout", "plan_slots", "reads_of", "staged"]
