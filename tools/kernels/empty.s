// kfdrt-bench's empty kernel: the dispatch latency a GPU can offer, with no work in the way.
.text
.globl kfdrt_bench_empty
.p2align 8
.type kfdrt_bench_empty,@function
kfdrt_bench_empty:
    s_endpgm
