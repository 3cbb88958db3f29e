//! # A counting global allocator
//!
//! The system allocator plus one counter of live heap bytes, for
//! benchmarks that report memory per object without reading the
//! process's resident size (which counts every endpoint of a sans-IO
//! benchmark, and pages the allocator keeps). A binary opts in with
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOC: peregrine_lab::bench::alloc::CountingAlloc = peregrine_lab::bench::alloc::CountingAlloc;
//! ```
//!
//! and counting stays off (one relaxed load per allocation) until a
//! benchmark calls [`enable`]: the `peregrine` command's other work pays
//! nothing measurable for it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

/// The system allocator, counting live bytes once [`enable`]d.
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingAlloc;

static ENABLED: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicI64 = AtomicI64::new(0);

fn count(delta: i64) {
    if ENABLED.load(Ordering::Relaxed) {
        LIVE.fetch_add(delta, Ordering::Relaxed);
    }
}

// SAFETY: every call is forwarded to `System` with the same arguments;
// the counter never changes what is returned.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged (the caller's contract).
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as i64);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged (the caller's contract).
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as i64);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged (the caller's contract).
        unsafe { System.dealloc(ptr, layout) };
        count(-(layout.size() as i64));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged (the caller's contract).
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as i64 - layout.size() as i64);
        }
        p
    }
}

/// Start counting; whether this process's global allocator is
/// [`CountingAlloc`] (an allocation moved the counter).
pub fn enable() -> bool {
    ENABLED.store(true, Ordering::SeqCst);
    let before = live_bytes();
    let probe = std::hint::black_box(vec![0u8; 4096]);
    let counted = live_bytes() != before;
    drop(probe);
    counted
}

/// Heap bytes allocated and not freed since counting was enabled
/// (negative when more was freed than allocated since then). Only
/// differences mean anything.
pub fn live_bytes() -> i64 {
    LIVE.load(Ordering::SeqCst)
}
