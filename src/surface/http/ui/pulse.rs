//! The last hour of the server's life, a minute at a time, for the web view's charts:
//! requests, their mean latency and the index's greatest lag in each minute.
//!
//! A ring of 60 samples in memory, fed by every request as it ends (one lock, a few
//! additions); a minute without requests has no sample. `/metrics` stays the place for
//! counters since the start; this is only what a person glancing at a page wants to see.

use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Minutes kept.
pub(super) const MINUTES: usize = 60;

/// One minute's sample.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Sample {
    /// Minutes since the epoch.
    minute: u64,
    requests: u64,
    latency_micros: u64,
    lag_ms: u64,
}

/// The ring.
#[derive(Debug)]
pub(super) struct Pulse {
    ring: Mutex<[Sample; MINUTES]>,
}

impl Default for Pulse {
    fn default() -> Pulse {
        Pulse { ring: Mutex::new([Sample::default(); MINUTES]) }
    }
}

/// The last hour, oldest minute first; None for a minute with no sample.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Hour {
    pub requests: Vec<Option<f64>>,
    /// Mean latency in milliseconds.
    pub latency_ms: Vec<Option<f64>>,
    /// The index's greatest lag in milliseconds.
    pub lag_ms: Vec<Option<f64>>,
}

fn minute_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() / 60)
}

impl Pulse {
    /// Counts a request that took `took`, with the index `lag_ms` behind the files.
    pub(super) fn record(&self, took: Duration, lag_ms: u64) {
        self.record_at(minute_now(), took, lag_ms);
    }

    fn record_at(&self, minute: u64, took: Duration, lag_ms: u64) {
        let mut ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        let slot = &mut ring[(minute % MINUTES as u64) as usize];
        if slot.minute != minute {
            *slot = Sample { minute, ..Sample::default() };
        }
        slot.requests += 1;
        slot.latency_micros += u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        slot.lag_ms = slot.lag_ms.max(lag_ms);
    }

    /// The hour up to now.
    pub(super) fn hour(&self) -> Hour {
        self.hour_at(minute_now())
    }

    fn hour_at(&self, now: u64) -> Hour {
        let ring = *self.ring.lock().unwrap_or_else(|e| e.into_inner());
        let mut hour = Hour { requests: Vec::new(), latency_ms: Vec::new(), lag_ms: Vec::new() };
        for back in (0..MINUTES as u64).rev() {
            let Some(minute) = now.checked_sub(back) else { continue };
            let s = ring[(minute % MINUTES as u64) as usize];
            let live = s.minute == minute && s.requests > 0;
            hour.requests.push(Some(if live { s.requests as f64 } else { 0.0 }));
            hour.latency_ms.push(live.then(|| s.latency_micros as f64 / s.requests as f64 / 1000.0));
            hour.lag_ms.push(live.then_some(s.lag_ms as f64));
        }
        hour
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_an_hour_a_minute_at_a_time_and_forgets_what_is_older() {
        let p = Pulse::default();
        p.record_at(1000, Duration::from_millis(2), 0);
        p.record_at(1000, Duration::from_millis(4), 30);
        p.record_at(1059, Duration::from_millis(1), 5);
        let h = p.hour_at(1059);
        assert_eq!(h.requests.len(), MINUTES);
        assert_eq!(h.requests[0], Some(2.0));
        assert_eq!(h.latency_ms[0], Some(3.0));
        assert_eq!(h.lag_ms[0], Some(30.0));
        assert_eq!(h.requests[1], Some(0.0));
        assert_eq!(h.latency_ms[1], None);
        assert_eq!(h.requests[59], Some(1.0));
        // An hour on, minute 1000's place is minute 1060's.
        p.record_at(1060, Duration::from_millis(1), 0);
        let h = p.hour_at(1060);
        assert_eq!(h.requests[58], Some(1.0));
        assert_eq!(h.requests[59], Some(1.0));
        assert_eq!(h.requests.iter().flatten().sum::<f64>(), 2.0);
    }
}
