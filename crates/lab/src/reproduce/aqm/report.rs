//! The Markdown report of `reproduce aqm`: what was run and what each
//! contender models, the AQM × contender table (goodput, queueing delay p50/p99 over the run and
//! after the warm-up, the priority stream's p99, marks and drops), issue
//! 41's two checks computed from the run, the L4S/classic pair, and the
//! charts. Every number comes from the run.

use super::{
    AqmSummary, CellFigures, Options, Stat, AQMS, BUFFER_BDP, CONTENDERS, ONE_WAY_MS,
    PRIORITY_MESSAGE_BYTES, RATE_MBPS, START_SPREAD_MS,
};
use crate::charts::{self, BarSeries, ChartText};
use crate::report::{Cell, Report, Table};
use std::path::{Path, PathBuf};

/// FQ-CoDel's check (issue 41): the field's CUBIC's queueing delay p99
/// over the whole run at most this, ms…
pub const FQ_CODEL_P99_MS: f64 = 15.0;
/// … at least this share of drop-tail's goodput.
pub const FQ_CODEL_GOODPUT_SHARE: f64 = 0.9;
/// DualPI2's check: Prague's queueing delay p99 at most this, ms…
pub const PRAGUE_P99_MS: f64 = 2.0;
/// … beside a CUBIC flow that keeps at least this share of the link.
pub const CUBIC_SHARE: f64 = 0.4;

fn cell(s: Stat, decimals: usize) -> Cell {
    Cell::mean_ci(s.mean, Some(s.ci95), decimals)
}

fn get<'a>(s: &'a AqmSummary, aqm: &str, cc: &str) -> Option<&'a CellFigures> {
    s.cells.get(aqm).and_then(|m| m.get(cc))
}

/// Grouped bars: one group per AQM, one bar per contender.
fn bars(
    dir: &Path,
    rep: &mut Report,
    s: &AqmSummary,
    file: &str,
    text: ChartText,
    f: fn(&CellFigures) -> Stat,
) -> anyhow::Result<()> {
    let groups: Vec<String> = AQMS.iter().map(|a| a.to_string()).collect();
    let series: Vec<BarSeries> = CONTENDERS
        .iter()
        .map(|c| c.key)
        .map(|cc| {
            let (v, e): (Vec<f64>, Vec<Option<f64>>) = AQMS
                .iter()
                .map(|a| get(s, a, cc).map_or((0.0, None), |c| (f(c).mean, Some(f(c).ci95))))
                .unzip();
            BarSeries::new(cc, v, e)
        })
        .collect();
    let path = dir.join("plots").join(file);
    charts::bar_chart(&path, &text, &groups, &series)?;
    rep.image(&text.title, &path);
    Ok(())
}

fn pass(ok: bool) -> Cell {
    Cell::Text(if ok { "yes" } else { "**no**" }.into())
}

/// Write `report.md` (and its charts) into `dir`; its path.
pub(super) fn write(dir: &Path, s: &AqmSummary, args: &Options) -> anyhow::Result<PathBuf> {
    let mut rep = Report::new(
        "AQM and L4S on one bottleneck: drop-tail, CoDel, FQ-CoDel, PIE, DualPI2 × Linux CUBIC, SLTP's CUBIC, BBR, BBRv3, Prague",
        dir,
    );
    let u = &s.setup;
    rep.heading(2, "What was run");
    rep.paragraph(&format!(
        "One bottleneck of {RATE_MBPS} Mbit/s with a {} ms round trip ({ONE_WAY_MS} ms each \
         way, 1 Gbit/s access links of 0.1 ms) and a {BUFFER_BDP}-BDP buffer, the world of \
         `scenarios/dumbbell-aqm.toml`, under each queue discipline at its RFC defaults \
         (the core sends ECT, so FQ-CoDel and DualPI2, whose `ecn` is on by default, mark \
         instead of dropping) and each contender (below). One connection per cell: a bulk stream \
         (class 3) and a priority stream (class 0, `abs` scheduler) of {PRIORITY_MESSAGE_BYTES}-byte \
         messages every 20 ms. {} s per run, {} seeds per cell (a seed sets the AQM's and \
         the controller's draws and the connection's start, drawn in the first \
         {START_SPREAD_MS} ms); cells are means ± 95 % CI half-widths.",
        u.rtt_ms, u.duration_s, u.seeds
    ));
    rep.code("sh", &args.command);
    rep.heading(2, "Contenders");
    rep.paragraph(
        "The field's claims are about the field's stacks: `cubic` is Linux CUBIC (the \
         kernel's HyStart slow-start exit, `cc_options.slow_start_exit = \"linux_hystart\"`, \
         and a receiver with TCP's delayed ACK, `ack_policy = \"tcp\"`: an ACK every second \
         packet). SLTP's own CUBIC (its defaults: HyStart++ and SLTP's thinned stretch \
         ACKs) is `cubic-sltp`, kept beside it.",
    );
    let mut t = Table::new([
        "contender",
        "cc",
        "ack_policy",
        "slow_start_exit",
        "what it models",
    ]);
    for (key, c) in s.contenders.iter() {
        t.row([
            Cell::Text(key.into()),
            Cell::Text(c.cc.clone()),
            Cell::Text(c.ack_policy.clone()),
            Cell::Text(
                c.slow_start_exit
                    .clone()
                    .unwrap_or_else(|| "(default)".into()),
            ),
            Cell::Text(c.description.clone()),
        ]);
    }
    rep.table(None, &t);
    rep.heading(2, "AQM × contender");
    let mut t = Table::new([
        "aqm",
        "contender",
        "goodput (Mbit/s)",
        "queue p50 (ms)",
        "queue p99 (ms)",
        "p50 after warm-up",
        "p99 after warm-up",
        "priority p99 (ms)",
        "priority p99 after warm-up",
        "CE marks",
        "AQM drops",
        "queue drops",
    ]);
    t.explain(
        "queue p50/p99",
        &format!(
            "one-way delay of the connection's DATA packets minus the empty path's ({:.2} ms), \
             over the whole run",
            u.base_delay_ms
        ),
    )
    .explain(
        "after warm-up",
        &format!(
            "the same over the packets received after {} s (`metrics.warmup`: slow start's \
             overshoot left out)",
            u.warmup_s
        ),
    )
    .explain(
        "priority p99",
        "the priority stream's message latency (queued → delivered), 99th percentile; \
         after warm-up: of the messages queued after it",
    )
    .explain(
        "marks, drops",
        "packets per run at the bottleneck's data direction",
    );
    for aqm in AQMS {
        for cc in CONTENDERS.iter().map(|c| c.key) {
            let Some(c) = get(s, aqm, cc) else { continue };
            t.row([
                Cell::Text(aqm.into()),
                Cell::Text(cc.into()),
                cell(c.flow.goodput_mbps, 2),
                cell(c.flow.queue_delay_p50_ms, 1),
                cell(c.flow.queue_delay_p99_ms, 1),
                cell(c.flow.queue_delay_p50_after_warmup_ms, 1),
                cell(c.flow.queue_delay_p99_after_warmup_ms, 1),
                cell(c.priority_latency_p99_ms, 1),
                cell(c.priority_latency_p99_after_warmup_ms, 1),
                cell(c.ce_marked, 0),
                cell(c.aqm_dropped, 0),
                cell(c.queue_drops, 0),
            ]);
        }
    }
    rep.table(None, &t);
    let k = &s.coexistence;
    rep.heading(2, "L4S beside classic in DualPI2");
    rep.paragraph(
        "Prague (ECT(1): the L4S queue, 1-ms step marking and the coupled k·p′) beside \
         Linux CUBIC (ECT(0): the classic queue, p′²), the contenders `prague` and `cubic` \
         above, one bulk flow each on its own pair of hosts, both pacing finely \
         (`pacing = \"fine\"`, as the UDP runtime paces).",
    );
    let mut t = Table::new([
        "flow",
        "goodput (Mbit/s)",
        "share",
        "queue p50 (ms)",
        "queue p99 (ms)",
        "p99 after warm-up",
    ]);
    for (cc, f) in k.flows.iter() {
        t.row([
            Cell::Text(cc.into()),
            cell(f.flow.goodput_mbps, 2),
            cell(f.share, 3),
            cell(f.flow.queue_delay_p50_ms, 2),
            cell(f.flow.queue_delay_p99_ms, 2),
            cell(f.flow.queue_delay_p99_after_warmup_ms, 2),
        ]);
    }
    rep.table(None, &t);
    rep.heading(2, "Issue 41's checks");
    let mut t = Table::new(["check", "measured", "met"]);
    let fq = get(s, "fq_codel", "cubic");
    let dt = get(s, "drop_tail", "cubic");
    if let (Some(fq), Some(dt)) = (fq, dt) {
        let p99 = fq.flow.queue_delay_p99_ms.mean;
        let share = fq.flow.goodput_mbps.mean / dt.flow.goodput_mbps.mean.max(1e-12);
        t.row([
            Cell::Text(format!(
                "FQ-CoDel: Linux CUBIC's queueing p99 ≤ {FQ_CODEL_P99_MS} ms (whole run)"
            )),
            Cell::Text(format!(
                "{p99:.1} ms (after the warm-up {:.1} ms)",
                fq.flow.queue_delay_p99_after_warmup_ms.mean
            )),
            pass(p99 <= FQ_CODEL_P99_MS),
        ]);
        t.row([
            Cell::Text(format!(
                "FQ-CoDel: Linux CUBIC's goodput ≥ {:.0} % of drop-tail's",
                100.0 * FQ_CODEL_GOODPUT_SHARE
            )),
            Cell::Text(format!("{:.1} %", 100.0 * share)),
            pass(share >= FQ_CODEL_GOODPUT_SHARE),
        ]);
    }
    // SLTP's CUBIC, for comparison: not the field's claim.
    if let (Some(fq), Some(dt)) = (
        get(s, "fq_codel", "cubic-sltp"),
        get(s, "drop_tail", "cubic-sltp"),
    ) {
        t.row([
            Cell::Text("(for comparison) FQ-CoDel: SLTP's CUBIC, the same figures".into()),
            Cell::Text(format!(
                "p99 {:.1} ms whole run, {:.1} ms after the warm-up; {:.1} % of drop-tail's goodput",
                fq.flow.queue_delay_p99_ms.mean,
                fq.flow.queue_delay_p99_after_warmup_ms.mean,
                100.0 * fq.flow.goodput_mbps.mean / dt.flow.goodput_mbps.mean.max(1e-12)
            )),
            Cell::Text("—".into()),
        ]);
    }
    if let (Some(p), Some(c)) = (k.flows.get("prague"), k.flows.get("cubic")) {
        let p99 = p.flow.queue_delay_p99_ms.mean;
        t.row([
            Cell::Text(format!(
                "DualPI2: Prague's queueing p99 ≤ {PRAGUE_P99_MS} ms (whole run)"
            )),
            Cell::Text(format!(
                "{p99:.2} ms (after the warm-up {:.2} ms)",
                p.flow.queue_delay_p99_after_warmup_ms.mean
            )),
            pass(p99 <= PRAGUE_P99_MS),
        ]);
        t.row([
            Cell::Text(format!(
                "DualPI2: Linux CUBIC keeps ≥ {:.0} % of the link",
                100.0 * CUBIC_SHARE
            )),
            Cell::Text(format!(
                "{:.1} % ({:.2} of {RATE_MBPS} Mbit/s)",
                100.0 * c.flow.goodput_mbps.mean / RATE_MBPS as f64,
                c.flow.goodput_mbps.mean
            )),
            pass(c.flow.goodput_mbps.mean >= CUBIC_SHARE * RATE_MBPS as f64),
        ]);
    }
    rep.table(None, &t);
    rep.heading(2, "Charts");
    bars(
        dir,
        &mut rep,
        s,
        "queue_p99_after_warmup.svg",
        ChartText::new(
            "Queueing delay p99 after the warm-up",
            "queue discipline",
            "queueing delay p99 (ms)",
        ),
        |c| c.flow.queue_delay_p99_after_warmup_ms,
    )?;
    bars(
        dir,
        &mut rep,
        s,
        "queue_p99.svg",
        ChartText::new(
            "Queueing delay p99 over the whole run",
            "queue discipline",
            "queueing delay p99 (ms)",
        ),
        |c| c.flow.queue_delay_p99_ms,
    )?;
    bars(
        dir,
        &mut rep,
        s,
        "goodput.svg",
        ChartText::new("Goodput", "queue discipline", "goodput (Mbit/s)"),
        |c| c.flow.goodput_mbps,
    )?;
    bars(
        dir,
        &mut rep,
        s,
        "priority_p99.svg",
        ChartText::new(
            "Priority stream's message latency p99 after the warm-up",
            "queue discipline",
            "latency p99 (ms)",
        ),
        |c| c.priority_latency_p99_after_warmup_ms,
    )?;
    let flows: Vec<String> = k.flows.keys().map(str::to_string).collect();
    let stat = |f: fn(&super::CoexistenceFlow) -> Stat| -> (Vec<f64>, Vec<Option<f64>>) {
        k.flows
            .iter()
            .map(|(_, x)| (f(x).mean, Some(f(x).ci95)))
            .unzip()
    };
    let (p50, e50) = stat(|x| x.flow.queue_delay_p50_ms);
    let (p99, e99) = stat(|x| x.flow.queue_delay_p99_ms);
    let text = ChartText::new(
        "DualPI2: queueing delay of the L4S and the classic flow",
        "flow",
        "queueing delay (ms)",
    );
    let path = dir.join("plots").join("coexistence_queue.svg");
    charts::bar_chart(
        &path,
        &text,
        &flows,
        &[
            BarSeries::new("p50", p50, e50),
            BarSeries::new("p99", p99, e99),
        ],
    )?;
    rep.image(&text.title, &path);
    Ok(rep.write()?)
}
