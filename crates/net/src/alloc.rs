//! # The allocator of a bulk receiver (glibc)
//!
//! A delivered message is a buffer the driver thread allocated (the
//! reassembly of its blocks) and the application frees on its own
//! thread. Under glibc's malloc the free goes back to the driver's arena,
//! whose top is then trimmed (`M_TRIM_THRESHOLD`, 128 KiB by default) —
//! returned to the kernel — and the next messages' buffers are faulted in
//! again, a zeroed page at a time. `perf record` of a loopback receiver
//! (issue 36, docs/performance.md "Profile") put 18–28 % of its CPU time
//! in those page faults (`exc_page_fault`, `clear_page_erms`,
//! `do_anonymous_page`, under the reassembly's `memmove`), and keeping
//! the freed heap (the thresholds below) raised bulk throughput 1.6×
//! with 1,452-byte datagrams.
//!
//! [`keep_freed_heap`] raises both thresholds for the whole process. It is
//! the application's choice — a process-wide setting a library should not
//! make behind its back — so the runtime never calls it; `peregrine perf`
//! does. A no-op where the C library is not glibc.

/// Freed heap kept before glibc trims an arena, bytes.
pub const TRIM_THRESHOLD_BYTES: i32 = 64 << 20;
/// Allocations at least this large are `mmap`ed by glibc (and unmapped
/// when freed), bytes: above the largest message `perf` uses (16 MiB).
pub const MMAP_THRESHOLD_BYTES: i32 = 32 << 20;

/// Keep freed heap in the process: glibc's trim threshold to
/// [`TRIM_THRESHOLD_BYTES`], its mmap threshold to
/// [`MMAP_THRESHOLD_BYTES`]. Process-wide; call once at start, before
/// threads allocate. Returns whether the C library took both (always
/// `false` off glibc). O(1).
pub fn keep_freed_heap() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `mallopt` only sets allocator parameters; both are
        // documented, in range, and safe to change at any time.
        unsafe {
            libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) == 1
                && libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn glibc_takes_both_thresholds() {
        assert!(super::keep_freed_heap());
    }
}
