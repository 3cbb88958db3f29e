fn main() {
    let name = std::env::args().nth(1).unwrap_or("newreno".into());
    let mut cc = peregrine_cc::build(&name).unwrap();
    let t = peregrine_cc::lab::run(cc.as_mut(), &peregrine_cc::lab::LabConfig::default());
    println!("{:?}", t.summary);
    for r in t
        .rows
        .iter()
        .filter(|r| r.event.is_some() && r.event != Some(peregrine_cc::lab::LabEvent::QueueDrop))
        .take(80)
    {
        println!(
            "{:.3} {} {:?} {:?} q={} inf={}",
            r.time.as_secs_f64(),
            r.cwnd_bytes / 1448,
            r.ssthresh_bytes.map(|s| s / 1448),
            r.event,
            r.queue_bytes,
            r.in_flight_pkts
        );
    }
}
