import json, time, torch
torch.backends.cuda.matmul.allow_tf32 = False
for m, k, n in [(400000, 128, 128), (8192, 256, 256), (8192, 128, 256), (40960, 512, 512), (800, 128, 128)]:
    a = torch.randn(m, k, device="cuda"); w = torch.randn(k, n, device="cuda")
    for _ in range(5): r = a @ w
    torch.cuda.synchronize(); t = time.perf_counter()
    for _ in range(50): r = a @ w
    torch.cuda.synchronize(); us = (time.perf_counter() - t) / 50 * 1e6
    print(json.dumps(dict(impl="torch", m=m, k=k, n=n, us=us, tflops=2*m*k*n/us/1e6)), flush=True)
