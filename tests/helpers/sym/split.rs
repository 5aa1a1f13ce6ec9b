// split.rs: the native split workload (see split.c) in Rust, built in release mode by the
// tests and benchmarks of native symbolization: rustc links with LLD, whose layout puts the
// code one page above its file offset.
//
//   split SECONDS [TRUTH_FILE]
use std::hint::black_box;
use std::time::{Duration, Instant};

fn thread_cpu() -> f64 {
    let mut ts = std::mem::MaybeUninit::<[i64; 2]>::uninit();
    // clock_gettime(CLOCK_THREAD_CPUTIME_ID = 3)
    extern "C" {
        fn clock_gettime(clk: i32, ts: *mut [i64; 2]) -> i32;
    }
    unsafe {
        clock_gettime(3, ts.as_mut_ptr());
        let t = ts.assume_init();
        t[0] as f64 + t[1] as f64 / 1e9
    }
}

#[inline(never)]
fn leaf_a(x: u64) -> u64 {
    x.wrapping_mul(2654435761).wrapping_add(1)
}

#[inline(never)]
fn work_a(n: u32) {
    let mut x = black_box(1u64);
    for _ in 0..n {
        x = leaf_a(black_box(x));
    }
    black_box(x);
}

#[inline(always)]
fn mix(mut x: u64) -> u64 {
    x ^= x >> 13;
    x = x.wrapping_mul(0x9e3779b97f4a7c15);
    x ^ (x >> 29)
}

#[inline(never)]
fn work_b(n: u32) {
    let mut x = black_box(1u64);
    for i in 0..n {
        x = mix(black_box(x) + i as u64);
    }
    black_box(x);
}

fn spin_for(secs: f64, f: fn(u32)) -> f64 {
    let t0 = thread_cpu();
    loop {
        f(20000);
        let t = thread_cpu();
        if t - t0 >= secs {
            return t - t0;
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let secs: f64 = args.get(1).map(|s| s.parse().unwrap_or(2.0)).unwrap_or(2.0);
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let (mut a, mut b) = (0.0, 0.0);
    while Instant::now() < end {
        a += spin_for(0.02, work_a);
        b += spin_for(0.01, work_b);
    }
    if let Some(path) = args.get(2) {
        std::fs::write(path, format!("work_a {:.3}\nwork_b {:.3}\n", a, b)).unwrap();
    }
}
