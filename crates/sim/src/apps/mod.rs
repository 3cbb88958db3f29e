//! Applications: what each stream of a flow offers to the transport.
//!
//! * **bulk** keeps the stream's send buffer full (saturating): the
//!   engine calls [`App::top_up`] whenever the sender's endpoint did
//!   something, and it queues messages until the stream's buffer limit
//!   (`buffer_bytes`) answers "full";
//! * **file** does the same until N bytes have been queued;
//! * **cbr** queues a message every `message_bytes · 8 / rate`;
//! * **onoff** is CBR during ON periods and silent during OFF periods,
//!   both exponential or Pareto with the configured means (Pareto scale
//!   `x_m = mean · (shape − 1) / shape`), drawn from the generator
//!   `app/<flow>/<stream>`;
//! * **trace** replays a message trace (`Delays,Data Length` CSV, delays
//!   with a `us` suffix, each the gap since the previous message).
//!
//! Timed applications return the instant they next want to run from
//! [`App::fire`]; the engine schedules it.

pub mod msgtrace;

use crate::rng::SimRng;
use crate::scenario::model::{AppSpec, PeriodDist};
use peregrine_cc::Time;
use rand::RngExt;
use std::sync::Arc;
use std::time::Duration;

pub use msgtrace::{MessageTrace, MessageTraceError};

/// A message the application wants queued now.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Offer {
    /// Its size, bytes.
    pub bytes: u32,
}

/// One application's state.
#[derive(Debug)]
pub struct App {
    spec: AppSpec,
    stop: Option<Time>,
    rng: SimRng,
    /// file: bytes queued so far.
    queued_bytes: u64,
    /// onoff: whether ON, and when the current period ends.
    on: bool,
    period_end: Time,
    /// trace: the messages and the next one.
    trace: Option<Arc<MessageTrace>>,
    trace_next: usize,
    trace_sent: u64,
    done: bool,
}

impl App {
    /// An application of `spec`, silent from `stop` on; `trace` is the
    /// loaded CSV of a trace app.
    pub fn new(
        spec: AppSpec,
        stop: Option<Time>,
        rng: SimRng,
        trace: Option<Arc<MessageTrace>>,
    ) -> App {
        App {
            spec,
            stop,
            rng,
            queued_bytes: 0,
            on: false,
            period_end: Time::ZERO,
            trace,
            trace_next: 0,
            trace_sent: 0,
            done: false,
        }
    }

    /// Whether this application fills a buffer (bulk, file) rather than
    /// running on its own clock.
    pub fn is_buffer_filling(&self) -> bool {
        matches!(self.spec, AppSpec::Bulk { .. } | AppSpec::File { .. })
    }

    /// The stream buffer limit this application wants, bytes.
    pub fn buffer_limit(&self) -> Option<u64> {
        match self.spec {
            AppSpec::Bulk { buffer_bytes, .. } | AppSpec::File { buffer_bytes, .. } => {
                Some(buffer_bytes)
            }
            _ => None,
        }
    }

    /// Whether the application has offered everything it ever will.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Whether it offers a finite amount (file, non-repeating trace).
    pub fn is_finite(&self) -> bool {
        match &self.spec {
            AppSpec::File { .. } => true,
            AppSpec::Trace { repeat, .. } => !repeat,
            _ => false,
        }
    }

    fn stopped(&self, now: Time) -> bool {
        self.stop.is_some_and(|s| now >= s)
    }

    /// Buffer-filling apps: the next message to try to queue at `now`
    /// (the engine calls [`accepted`](Self::accepted) if the transport took it).
    /// O(1).
    pub fn top_up(&self, now: Time) -> Option<Offer> {
        if self.done || self.stopped(now) {
            return None;
        }
        match self.spec {
            AppSpec::Bulk { message_bytes, .. } => Some(Offer {
                bytes: message_bytes,
            }),
            AppSpec::File {
                bytes,
                message_bytes,
                ..
            } => {
                let left = bytes.saturating_sub(self.queued_bytes);
                (left > 0).then(|| Offer {
                    bytes: left.min(u64::from(message_bytes)) as u32,
                })
            }
            _ => None,
        }
    }

    /// The transport accepted an offered message.
    pub fn accepted(&mut self, offer: Offer) {
        self.queued_bytes += u64::from(offer.bytes);
        if let AppSpec::File { bytes, .. } = self.spec {
            if self.queued_bytes >= bytes {
                self.done = true;
            }
        }
    }

    fn period(&mut self, mean_ns: u64, dist: PeriodDist) -> Duration {
        let u: f64 = self.rng.random();
        let mean = mean_ns as f64;
        let x = match dist {
            PeriodDist::Exponential => -(1.0 - u).ln() * mean,
            PeriodDist::Pareto(shape) => {
                let xm = mean * (shape - 1.0) / shape;
                xm / (1.0 - u).powf(1.0 / shape)
            }
        };
        // At least 1 µs so time always advances; at most ~1 day.
        Duration::from_nanos(x.clamp(1_000.0, 8.64e13) as u64)
    }

    /// Timed apps: the application's clock fired at `now`. Returns the
    /// messages to queue now and when to fire next (`None`: never).
    /// O(messages queued).
    pub fn fire(&mut self, now: Time, out: &mut Vec<Offer>) -> Option<Time> {
        if self.done || self.stopped(now) {
            self.done = true;
            return None;
        }
        match self.spec.clone() {
            AppSpec::Cbr {
                rate_bps,
                message_bytes,
            } => {
                out.push(Offer {
                    bytes: message_bytes,
                });
                Some(now + gap(message_bytes, rate_bps))
            }
            AppSpec::OnOff {
                rate_bps,
                message_bytes,
                dist,
                mean_on_ns,
                mean_off_ns,
            } => {
                if self.period_end == Time::ZERO && !self.on {
                    // First firing: start an ON period.
                    self.on = true;
                    self.period_end = now + self.period(mean_on_ns, dist);
                }
                if now >= self.period_end {
                    self.on = !self.on;
                    let mean = if self.on { mean_on_ns } else { mean_off_ns };
                    self.period_end = now + self.period(mean, dist);
                }
                if self.on {
                    out.push(Offer {
                        bytes: message_bytes,
                    });
                    Some((now + gap(message_bytes, rate_bps)).min(self.period_end))
                } else {
                    Some(self.period_end)
                }
            }
            AppSpec::Trace {
                repeat,
                max_messages,
                ..
            } => {
                let trace = self.trace.clone()?;
                let msgs = trace.messages();
                if msgs.is_empty() {
                    self.done = true;
                    return None;
                }
                // Queue every message due now (gaps of 0 µs are common).
                loop {
                    if max_messages.is_some_and(|m| self.trace_sent >= m) {
                        self.done = true;
                        return None;
                    }
                    let (_, size) = msgs[self.trace_next];
                    out.push(Offer { bytes: size.max(1) });
                    self.trace_sent += 1;
                    self.trace_next += 1;
                    if self.trace_next == msgs.len() {
                        if !repeat {
                            self.done = true;
                            return None;
                        }
                        self.trace_next = 0;
                    }
                    let gap_ns = msgs[self.trace_next].0;
                    if gap_ns > 0 {
                        return Some(now + Duration::from_nanos(gap_ns));
                    }
                }
            }
            AppSpec::Bulk { .. } | AppSpec::File { .. } => None,
        }
    }
}

/// Time between messages of `bytes` at `rate_bps` (at least 1 ns).
fn gap(bytes: u32, rate_bps: u64) -> Duration {
    Duration::from_nanos((u64::from(bytes) * 8 * 1_000_000_000 / rate_bps.max(1)).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::component_rng;

    #[test]
    fn cbr_spaces_messages_by_size_over_rate() {
        let mut a = App::new(
            AppSpec::Cbr {
                rate_bps: 80_000,
                message_bytes: 1000,
            },
            None,
            component_rng(1, "a"),
            None,
        );
        let mut out = Vec::new();
        assert_eq!(a.fire(Time::ZERO, &mut out), Some(Time::from_millis(100)));
        assert_eq!(out, [Offer { bytes: 1000 }]);
    }

    #[test]
    fn file_offers_exactly_n_bytes() {
        let mut a = App::new(
            AppSpec::File {
                bytes: 2500,
                message_bytes: 1000,
                buffer_bytes: 1 << 20,
            },
            None,
            component_rng(1, "a"),
            None,
        );
        let mut total = 0;
        while let Some(o) = a.top_up(Time::ZERO) {
            total += o.bytes;
            a.accepted(o);
        }
        assert_eq!(total, 2500);
        assert!(a.is_done());
    }

    #[test]
    fn onoff_duty_cycle_follows_the_means() {
        for dist in [PeriodDist::Exponential, PeriodDist::Pareto(2.5)] {
            let spec = AppSpec::OnOff {
                rate_bps: 8_000_000,
                message_bytes: 1000,
                dist,
                mean_on_ns: 100_000_000,
                mean_off_ns: 300_000_000,
            };
            let mut a = App::new(spec, None, component_rng(4, "onoff"), None);
            let mut t = Time::ZERO;
            let mut sent = 0u64;
            let mut out = Vec::new();
            while t < Time::from_millis(400_000) {
                out.clear();
                t = a.fire(t, &mut out).expect("onoff never ends without stop");
                sent += out.len() as u64;
            }
            // 1000 msg/s while ON, ON a quarter of the time: ~250 msg/s.
            let per_s = sent as f64 / 400.0;
            assert!((per_s - 250.0).abs() < 40.0, "{dist:?}: {per_s} msg/s");
        }
    }

    #[test]
    fn stop_ends_the_application() {
        let mut a = App::new(
            AppSpec::Cbr {
                rate_bps: 80_000,
                message_bytes: 1000,
            },
            Some(Time::from_nanos(50)),
            component_rng(1, "a"),
            None,
        );
        let mut out = Vec::new();
        assert_eq!(a.fire(Time::from_nanos(60), &mut out), None);
        assert!(out.is_empty());
        assert!(a.is_done());
    }
}
