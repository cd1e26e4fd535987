//! Socket liveness: when to send a WebSocket ping, and when a silent or idle
//! client is dropped. Pure bookkeeping over `tokio::time::Instant`, so the
//! socket task stays simple and the rules are tested under a paused clock.
//!
//! - Every `ping_period` the server pings.
//! - A client from which nothing (no frame, no pong) arrived for `pong_wait`
//!   is dead and closed.
//! - With an idle timeout, a client that sent no envelope for that long is
//!   closed even though it answers pings.

use std::time::Duration;

use tokio::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LivenessConfig {
    pub ping_period: Duration,
    pub pong_wait: Duration,
    /// `None`: sockets may stay idle as long as they answer pings.
    pub idle_timeout: Option<Duration>,
}

/// What the socket must do when the liveness deadline passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// Send a ping now.
    Ping,
    /// Nothing arrived within `pong_wait`: close.
    Dead,
    /// No envelope within the idle timeout: close.
    Idle,
    /// Woke early; wait for the next deadline.
    Nothing,
}

#[derive(Debug, Clone)]
pub struct Liveness {
    config: LivenessConfig,
    last_frame: Instant,
    last_message: Instant,
    next_ping: Instant,
}

impl Liveness {
    pub fn new(config: LivenessConfig, now: Instant) -> Liveness {
        Liveness {
            config,
            last_frame: now,
            last_message: now,
            next_ping: now + config.ping_period,
        }
    }

    /// Any frame arrived (data, ping, pong).
    pub fn saw_frame(&mut self, now: Instant) {
        self.last_frame = now;
    }

    /// An envelope arrived: the client is both alive and active.
    pub fn saw_message(&mut self, now: Instant) {
        self.last_frame = now;
        self.last_message = now;
    }

    /// When [`Liveness::check`] next has something to do.
    pub fn deadline(&self) -> Instant {
        let mut d = self.next_ping.min(self.last_frame + self.config.pong_wait);
        if let Some(idle) = self.config.idle_timeout {
            d = d.min(self.last_message + idle);
        }
        d
    }

    /// Decides what is due at `now`.
    pub fn check(&mut self, now: Instant) -> Due {
        if now >= self.last_frame + self.config.pong_wait {
            return Due::Dead;
        }
        if let Some(idle) = self.config.idle_timeout
            && now >= self.last_message + idle
        {
            return Due::Idle;
        }
        if now >= self.next_ping {
            self.next_ping = now + self.config.ping_period;
            return Due::Ping;
        }
        Due::Nothing
    }
}

#[cfg(test)]
mod tests {
    use tokio::time::{advance, sleep_until};

    use super::*;

    fn config(idle: Option<u64>) -> LivenessConfig {
        LivenessConfig {
            ping_period: Duration::from_millis(15_000),
            pong_wait: Duration::from_millis(25_000),
            idle_timeout: idle.map(Duration::from_millis),
        }
    }

    /// Sleeps to the deadline and checks, as the socket task does.
    async fn tick(l: &mut Liveness) -> (Due, u128) {
        let start = Instant::now();
        sleep_until(l.deadline()).await;
        (l.check(Instant::now()), start.elapsed().as_millis())
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_client_is_pinged_then_dropped_after_pong_wait() {
        let t0 = Instant::now();
        let mut l = Liveness::new(config(None), t0);
        assert_eq!(tick(&mut l).await, (Due::Ping, 15_000));
        assert_eq!(tick(&mut l).await, (Due::Dead, 10_000));
        assert_eq!(t0.elapsed(), Duration::from_millis(25_000));
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_answers_pings_stays() {
        let mut l = Liveness::new(config(None), Instant::now());
        for _ in 0..10 {
            assert_eq!(tick(&mut l).await.0, Due::Ping);
            advance(Duration::from_millis(100)).await;
            l.saw_frame(Instant::now());
        }
    }

    #[tokio::test(start_paused = true)]
    async fn idle_timeout_closes_a_client_that_only_answers_pings() {
        let mut l = Liveness::new(config(Some(40_000)), Instant::now());
        let mut dues = Vec::new();
        loop {
            let (due, _) = tick(&mut l).await;
            dues.push(due);
            if due == Due::Ping {
                l.saw_frame(Instant::now());
            }
            if matches!(due, Due::Dead | Due::Idle) {
                break;
            }
        }
        assert_eq!(dues, vec![Due::Ping, Due::Ping, Due::Idle]);
    }

    #[tokio::test(start_paused = true)]
    async fn messages_push_the_idle_deadline_back() {
        let mut l = Liveness::new(config(Some(20_000)), Instant::now());
        advance(Duration::from_millis(10_000)).await;
        l.saw_message(Instant::now());
        assert_eq!(l.check(Instant::now()), Due::Nothing);
        assert_eq!(tick(&mut l).await, (Due::Ping, 5_000));
        l.saw_frame(Instant::now());
        assert_eq!(tick(&mut l).await, (Due::Idle, 15_000));
    }

    /// The socket keeps one timer and moves it only when it fires, which
    /// is right only if nothing ever brings the deadline earlier: frames,
    /// messages and checks at any moment only push it back.
    #[tokio::test(start_paused = true)]
    async fn the_deadline_never_moves_earlier() {
        for idle in [None, Some(20_000), Some(7_000)] {
            let mut l = Liveness::new(config(idle), Instant::now());
            let mut last = l.deadline();
            for step in 0..200u64 {
                advance(Duration::from_millis(137 * (step % 11))).await;
                let now = Instant::now();
                match step % 4 {
                    0 => l.saw_frame(now),
                    1 => l.saw_message(now),
                    2 => {
                        let _ = l.check(now);
                    }
                    _ => {}
                }
                let deadline = l.deadline();
                assert!(deadline >= last, "step {step}: the deadline moved earlier");
                last = deadline;
            }
        }
    }
}
