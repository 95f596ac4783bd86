"""A program of two host threads waiting for one timeline value, written with the `vulkan` package, for
tests/test_import.py to capture.

The main thread submits a copy from buffer S that signals the timeline to 1 and waits for 1; then (told by a
threading.Event, which the capture does not see) the reader thread waits for 1 too, which returns at once, writes S
through its mapping (the copy's read of S is done: no race) and submits a second copy, signalling 2. The reader's
own wait is what orders its write after the copy.

    python -m tests.two_waiters_program
"""

import threading
import vulkan as vk

app = vk.VkApplicationInfo(pApplicationName="two-waiters", apiVersion=vk.VK_MAKE_VERSION(1, 2, 0))
instance = vk.vkCreateInstance(vk.VkInstanceCreateInfo(pApplicationInfo=app), None)
physical = vk.vkEnumeratePhysicalDevices(instance)[0]
family = next(i for i, f in enumerate(vk.vkGetPhysicalDeviceQueueFamilyProperties(physical))
              if f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT)
features = vk.VkPhysicalDeviceVulkan12Features(timelineSemaphore=vk.VK_TRUE)
queue_info = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=family, queueCount=1, pQueuePriorities=[1.0])
device = vk.vkCreateDevice(physical, vk.VkDeviceCreateInfo(pNext=features, queueCreateInfoCount=1,
                                                           pQueueCreateInfos=[queue_info]), None)
queue = vk.vkGetDeviceQueue(device, family, 0)
wanted = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
props = vk.vkGetPhysicalDeviceMemoryProperties(physical)
memory_type = next(i for i in range(props.memoryTypeCount) if props.memoryTypes[i].propertyFlags & wanted == wanted)
# Storage too: not a staging buffer, which the import takes the host to read after its copy (an assumed read)
usage = (vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
         | vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT)


def buffer():
    b = vk.vkCreateBuffer(device, vk.VkBufferCreateInfo(size=4096, usage=usage,
                                                        sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE), None)
    size = vk.vkGetBufferMemoryRequirements(device, b).size
    m = vk.vkAllocateMemory(device, vk.VkMemoryAllocateInfo(allocationSize=size, memoryTypeIndex=memory_type), None)
    vk.vkBindBufferMemory(device, b, m, 0)
    return b, m


(src, src_memory), (dst, dst_memory), (other, other_memory) = buffer(), buffer(), buffer()
mapped = vk.vkMapMemory(device, src_memory, 0, 4096, 0)
mapped[:4096] = bytes(range(256)) * 16
timeline_kind = vk.VkSemaphoreTypeCreateInfo(semaphoreType=vk.VK_SEMAPHORE_TYPE_TIMELINE, initialValue=0)
timeline = vk.vkCreateSemaphore(device, vk.VkSemaphoreCreateInfo(pNext=timeline_kind), None)
pool = vk.vkCreateCommandPool(device, vk.VkCommandPoolCreateInfo(
    flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, queueFamilyIndex=family), None)
lock = threading.Lock()  # the pool and the queue are shared by both threads


def submit(copy_from, copy_to, signal):
    with lock:
        cbs = vk.vkAllocateCommandBuffers(device, vk.VkCommandBufferAllocateInfo(
            commandPool=pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))
        vk.vkBeginCommandBuffer(cbs[0], vk.VkCommandBufferBeginInfo())
        regions = [vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=4096)]
        vk.vkCmdCopyBuffer(cbs[0], copy_from, copy_to, 1, regions)
        vk.vkEndCommandBuffer(cbs[0])
        values = [signal]
        timeline_info = vk.VkTimelineSemaphoreSubmitInfo(signalSemaphoreValueCount=1, pSignalSemaphoreValues=values)
        semaphores = [timeline]
        info = vk.VkSubmitInfo(pNext=timeline_info, commandBufferCount=1, pCommandBuffers=cbs,
                               signalSemaphoreCount=1, pSignalSemaphores=semaphores)
        vk.vkQueueSubmit(queue, 1, [info], None)


def wait(value):
    semaphores, values = [timeline], [value]
    vk.vkWaitSemaphores(device, vk.VkSemaphoreWaitInfo(semaphoreCount=1, pSemaphores=semaphores, pValues=values),
                        10**10)


first_waited = threading.Event()  # outside Vulkan: the capture does not see it


def reader():
    first_waited.wait()
    wait(1)  # returns at once: the main thread saw 1 first; this thread's own wait orders what follows
    mapped[:4096] = bytes(4096)  # the copy read these bytes: a write after the wait, no race
    submit(src, other, 2)
    wait(2)


thread = threading.Thread(target=reader)
thread.start()
submit(src, dst, 1)
wait(1)
first_waited.set()
thread.join()
vk.vkUnmapMemory(device, src_memory)
vk.vkDeviceWaitIdle(device)
vk.vkDestroyCommandPool(device, pool, None)
vk.vkDestroySemaphore(device, timeline, None)
for b, m in ((src, src_memory), (dst, dst_memory), (other, other_memory)):
    vk.vkDestroyBuffer(device, b, None)
    vk.vkFreeMemory(device, m, None)
vk.vkDestroyDevice(device, None)
vk.vkDestroyInstance(instance, None)
