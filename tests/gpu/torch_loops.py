"""PyTorch loops for the real-GPU validation: run one scenario; with
--profile, also measure it with torch.profiler and print the total CUDA
kernel time it saw (JSON on the last line)."""
import json
import sys
import time


def main():
    import torch
    scenario = sys.argv[1]
    prof = "--profile" in sys.argv
    dev = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
                                torch.nn.Linear(4096, 1024)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(256, 1024, device=dev)

    def step(inp):
        opt.zero_grad(set_to_none=True)
        loss = model(inp).square().mean()
        loss.backward()
        opt.step()

    if scenario == "dataloader":
        class Slow(torch.utils.data.Dataset):
            def __len__(self):
                return 40

            def __getitem__(self, i):
                time.sleep(0.005)  # a slow loader: the GPU waits for the host
                return torch.randn(1024)

        loader = torch.utils.data.DataLoader(Slow(), batch_size=8)
        body = lambda: [step(b.to(dev, non_blocking=True)) for b in loader]
    elif scenario == "compile":
        fast = torch.compile(model)
        fast(x).sum().backward()  # compile outside the measured part
        body = lambda: [fast(x).sum().backward() for _ in range(50)]
    elif scenario == "graphs":
        static = x.clone()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                model(static)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(g):
            model(static)
        body = lambda: [g.replay() for _ in range(100)]
    elif scenario == "nvtx":
        def body():
            for _ in range(30):
                torch.cuda.nvtx.range_push("step")
                torch.cuda.nvtx.range_push("forward")
                y = model(x)
                torch.cuda.nvtx.range_pop()
                torch.cuda.nvtx.range_push("backward")
                y.square().mean().backward()
                torch.cuda.nvtx.range_pop()
                torch.cuda.nvtx.range_pop()
    else:
        sys.exit(f"unknown scenario {scenario}")
    torch.cuda.synchronize()
    if prof:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as p:
            body()
            torch.cuda.synchronize()
        total_us = sum(e.device_time for e in p.events()
                       if e.device_type == torch.autograd.DeviceType.CUDA)
        print(json.dumps({"scenario": scenario, "profiler_kernel_ns": int(total_us * 1000)}))
    else:
        # the measured part, as a phase for gpuphase
        torch.cuda.nvtx.range_push("gp-measured")
        body()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        print(json.dumps({"scenario": scenario}))


if __name__ == "__main__":
    main()
