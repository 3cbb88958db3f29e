//! The controller lab: an ACK-clocked single-bottleneck model (in progress).
