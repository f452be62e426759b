"""A few driver-API calls through ctypes, for the tests' child interpreters: drives the simulated driver
(tests/fakecuda, found as libcuda.so.1 through LD_LIBRARY_PATH) the way CuPy does, by dlsym.

    gpu = fakegpu.Gpu()                       # cuInit, primary context of device 0, current
    k = gpu.kernels("k1", "k2")               # cuModuleLoadData("fakecubin:k1,k2") + cuModuleGetFunction
    rc = gpu.launch(k["k1"])                  # cuLaunchKernel on the legacy stream: the driver's answer
    rc = gpu.sync()                           # cuCtxSynchronize
    rc = gpu.stream_sync()                    # cuStreamSynchronize on the legacy default stream
"""

import ctypes

CUresult = ctypes.c_int
ptr = ctypes.c_void_p


class DriverError(RuntimeError):
    def __init__(self, call, rc):
        super().__init__("%s failed: %d" % (call, rc))
        self.rc = rc


class Gpu:
    def __init__(self, device=0):
        self.lib = lib = ctypes.CDLL("libcuda.so.1")
        sig = {
            "cuInit": [ctypes.c_uint],
            "cuDeviceGet": [ctypes.POINTER(ctypes.c_int), ctypes.c_int],
            "cuDevicePrimaryCtxRetain": [ctypes.POINTER(ptr), ctypes.c_int],
            "cuCtxSetCurrent": [ptr],
            "cuModuleLoadData": [ctypes.POINTER(ptr), ctypes.c_char_p],
            "cuModuleGetFunction": [ctypes.POINTER(ptr), ptr, ctypes.c_char_p],
            "cuLaunchKernel": [ptr, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                               ctypes.c_uint, ctypes.c_uint, ptr, ptr, ptr],
            "cuCtxSynchronize": [],
            "cuStreamSynchronize": [ptr],
        }
        self.fn = {}
        for name, argtypes in sig.items():
            f = getattr(lib, name)
            f.restype = CUresult
            f.argtypes = argtypes
            self.fn[name] = f
        self.check("cuInit", 0)
        dev = ctypes.c_int()
        self.check("cuDeviceGet", ctypes.byref(dev), device)
        self.ctx = ptr()
        self.check("cuDevicePrimaryCtxRetain", ctypes.byref(self.ctx), dev.value)
        self.check("cuCtxSetCurrent", self.ctx)

    def check(self, name, *args):
        rc = self.fn[name](*args)
        if rc != 0:
            raise DriverError(name, rc)

    def kernels(self, *names):
        mod = ptr()
        self.check("cuModuleLoadData", ctypes.byref(mod), ("fakecubin:" + ",".join(names)).encode())
        out = {}
        for n in names:
            f = ptr()
            self.check("cuModuleGetFunction", ctypes.byref(f), mod, n.encode())
            out[n] = f
        return out

    def launch(self, func, grid=1, block=32):
        return self.fn["cuLaunchKernel"](func, grid, 1, 1, block, 1, 1, 0, None, None, None)

    def sync(self):
        return self.fn["cuCtxSynchronize"]()

    def stream_sync(self, stream=None):
        """cuStreamSynchronize (the legacy default stream when stream is None), as .item() ends with."""
        return self.fn["cuStreamSynchronize"](stream)
