//! One file per algorithm (cc-spec §3).

pub mod bbr;
pub mod bbr3;
pub mod bic;
pub mod compound;
pub mod cubic;
pub mod fixed;
pub mod highspeed;
pub mod htcp;
pub mod hybla;
pub mod illinois;
pub mod ledbat;
pub mod newreno;
pub mod prague;
pub mod rtwtcp;
pub mod scalable;
pub mod shtcp;
pub mod vegas;
pub mod veno;
pub mod westwood;
pub mod yeah;
