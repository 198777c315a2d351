//! The trace through its file and back: round trips, bad lines located,
//! files from before a column existed.

use super::integrity::Check;
use super::read::read;
use super::write::EventWriter;
use super::*;

#[tokio::test]
async fn events_round_trip_through_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.trace");
    let writer = EventWriter::create(&path).unwrap();
    let tx = writer.sender();
    let e = Event {
        seq: 3,
        key: "customer-7".into(),
        replica: 2,
        intended_us: 1_000,
        sent_us: 1_200,
        done_us: 3_000,
        status: 429,
        outcome: Outcome::Rejected,
        error: None,
        advertised: Some(Advertised {
            limit: Some(10),
            window_s: None,
            remaining: Some(0),
            reset_ms: Some(1_500),
            retry_after_ms: Some(2_000),
            present: 9,
            malformed: 0,
        }),
        retry_of: None,
        agent: 0,
    };
    let refused = Event {
        seq: 4,
        status: 0,
        outcome: Outcome::Error,
        error: Some(ErrorKind::ConnectRefused),
        advertised: None,
        ..e.clone()
    };
    let odd = Event {
        seq: 5,
        key: "a,\"b\"".into(),
        outcome: Outcome::Timeout,
        ..e.clone()
    };
    let retried = Event {
        seq: 6,
        retry_of: Some(RetryOf {
            first: 3,
            attempt: 2,
        }),
        ..e.clone()
    };
    tx.send(vec![e.clone()]).await.unwrap();
    tx.send(vec![refused.clone(), odd.clone(), retried.clone()])
        .await
        .unwrap();
    drop(tx);
    assert_eq!(writer.finish().unwrap().events, 4);
    let bytes = std::fs::read(&path).unwrap();
    assert!(bytes.starts_with(super::binary::MAGIC));
    let back: Vec<Event> = read(&path, Check::default())
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let all = vec![e.clone(), refused.clone(), odd.clone(), retried.clone()];
    assert_eq!(back, all);
    // The same events through the CSV form (exports, and folders from
    // before the binary trace) come back the same.
    let csv = dir.path().join("a.csv");
    let mut text = super::csv::HEADER.to_vec();
    for ev in &all {
        super::csv::write_line(&mut text, ev).unwrap();
    }
    std::fs::write(&csv, &text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.starts_with("seq,key,replica,intended_us,sent_us,done_us,status,outcome,error,rl_"),
        "{text}"
    );
    assert!(
        text.contains(",error,connect_refused,,,,,,,,1,\n"),
        "{text}"
    );
    assert!(
        text.contains(",rejected,,10,,0,1500,2000,9,0,1,\n"),
        "{text}"
    );
    assert!(text.starts_with("6,") || text.contains("\n6,"), "{text}");
    assert!(
        text.contains(",rejected,,10,,0,1500,2000,9,0,2,3\n"),
        "{text}"
    );
    let back: Vec<Event> = read(&csv, Check::default())
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(back, all);
    assert_eq!((e.attempt(), retried.attempt()), (1, 2));
    assert_eq!(e.latency_us(), 2_000);
    assert_eq!(e.lag_us(), 200);
}

#[test]
fn a_bad_field_is_an_error_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.csv");
    std::fs::write(
        &path,
        "seq,key,replica,intended_us,sent_us,done_us,status,outcome,error\n\
         0,k,1,10,20,30,200,admitted,\n\
         1,k,1,10,2x,30,200,admitted,\n\
         2,k,1,10,20,30,200,maybe,\n",
    )
    .unwrap();
    let back: Vec<Result<Event, crate::events::EventsError>> =
        read(&path, Check::default()).unwrap().collect();
    assert!(back[0].is_ok());
    // The first error ends the reading: it is said once, never judged past.
    assert_eq!(back.len(), 2);
    let e = back[1].as_ref().unwrap_err().to_string();
    assert!(
        e.ends_with("bad.csv:3: sent_us: \"2x\" is not a number"),
        "{e}"
    );
    std::fs::write(
        &path,
        "seq,key,replica,intended_us,sent_us,done_us,status,outcome,error
         2,k,1,10,20,30,200,maybe,
",
    )
    .unwrap();
    let e = read(&path, Check::default())
        .unwrap()
        .next()
        .unwrap()
        .unwrap_err()
        .to_string();
    assert!(e.contains(":2: unknown outcome \"maybe\""), "{e}");
    let missing = dir.path().join("missing.csv");
    std::fs::write(&missing, "seq,key\n0,k\n").unwrap();
    let e = read(&missing, Check::default()).err().unwrap().to_string();
    assert!(e.contains("no column \"replica\""), "{e}");
}

#[test]
fn files_without_the_error_column_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.csv");
    std::fs::write(
        &path,
        "seq,key,replica,intended_us,sent_us,done_us,status,outcome\n0,k,1,10,20,30,200,admitted\n",
    )
    .unwrap();
    let back: Vec<Event> = read(&path, Check::default())
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].error, None);
    assert_eq!(back[0].outcome, Outcome::Admitted);
}

#[tokio::test]
async fn a_cut_short_trace_reads_up_to_the_cut_then_says_where() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.trace");
    let writer = EventWriter::create(&path).unwrap();
    let tx = writer.sender();
    let e = Event {
        seq: 0,
        key: "k".into(),
        replica: 0,
        intended_us: 1,
        sent_us: 2,
        done_us: 3,
        status: 200,
        outcome: Outcome::Admitted,
        error: None,
        advertised: None,
        retry_of: None,
        agent: 0,
    };
    tx.send(vec![
        e.clone(),
        Event {
            seq: 1,
            ..e.clone()
        },
    ])
    .await
    .unwrap();
    drop(tx);
    let seal = writer.finish().unwrap();
    let whole = std::fs::read(&path).unwrap();
    let sealed = Check {
        seal: Some(seal),
        unfinished: false,
    };
    assert_eq!(read(&path, sealed).unwrap().count(), 2);
    std::fs::write(&path, &whole[..whole.len() - 5]).unwrap();
    let back: Vec<Result<Event, crate::events::EventsError>> =
        read(&path, Check::default()).unwrap().collect();
    assert_eq!(back.len(), 2);
    assert_eq!(back[0].as_ref().unwrap(), &e);
    let err = back[1].as_ref().unwrap_err().to_string();
    assert!(
        err.contains("cut.trace: byte ") && err.contains("cut short"),
        "{err}"
    );
    // What a kill leaves (an unfinished trace): the cut record is dropped.
    let killed = Check {
        seal: None,
        unfinished: true,
    };
    let back: Vec<Event> = read(&path, killed).unwrap().map(Result::unwrap).collect();
    assert_eq!(back, std::slice::from_ref(&e));
    // Cut at a record's end, the count tells; one byte changed, the sum.
    // (an event without an advertisement is 46 bytes)
    std::fs::write(&path, &whole[..whole.len() - 46]).unwrap();
    let back: Vec<Result<Event, crate::events::EventsError>> =
        read(&path, sealed).unwrap().collect();
    assert_eq!(back[0].as_ref().unwrap(), &e);
    let err = back[1].as_ref().unwrap_err().to_string();
    assert!(
        err.contains("1 events, but its record says the run wrote 2"),
        "{err}"
    );
    let mut changed = whole.clone();
    // The last event's intended time (its record's bytes 17..25).
    let at = whole.len() - 46 + 17;
    changed[at] ^= 1;
    std::fs::write(&path, &changed).unwrap();
    let err = read(&path, sealed)
        .unwrap()
        .last()
        .unwrap()
        .unwrap_err()
        .to_string();
    assert!(err.contains("the trace was changed"), "{err}");
    // Not a trace at all, or an empty file: said so, never read as CSV.
    for bytes in [&b"rlbtrcXX"[..], &b""[..]] {
        std::fs::write(&path, bytes).unwrap();
        let err = read(&path, Check::default()).err().unwrap().to_string();
        assert!(err.contains("cut.trace: not an rlbench trace"), "{err}");
        // What was expected, in words, never a list of byte values.
        assert!(err.contains("the 8 bytes \"rlbtrc01\""), "{err}");
        assert!(!err.contains("[114"), "{err}");
    }
}

#[test]
fn every_advertised_field_and_error_kind_survives_the_binary_form() {
    use super::binary::Encoder;
    let kinds = ErrorKind::ALL;
    let mut events = Vec::new();
    for (i, kind) in kinds.iter().enumerate() {
        // Each advertised field present or not, by the bits of i.
        let bit = |b: usize| (i >> b) & 1 == 1;
        events.push(Event {
            seq: i as u64,
            key: format!("key-{}", i % 3),
            replica: i as u32,
            intended_us: u64::MAX - i as u64,
            sent_us: 7,
            done_us: 9,
            status: 503,
            outcome: Outcome::Error,
            error: Some(*kind),
            advertised: (i > 0).then(|| Advertised {
                limit: bit(0).then_some(10),
                window_s: bit(1).then_some(60),
                remaining: bit(2).then_some(0),
                reset_ms: bit(0).then_some(1_234),
                retry_after_ms: bit(1).then_some(u64::MAX),
                present: i as u8,
                malformed: 1,
            }),
            // Every other one a retry, with or without an advertisement.
            retry_of: (i % 2 == 1).then_some(RetryOf {
                first: u64::MAX - 1,
                attempt: i as u8 + 1,
            }),
            // An agent's index on every third, the largest on one.
            agent: [0, 3, u16::MAX][i % 3],
        });
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("all.trace");
    let mut bytes = Vec::new();
    Encoder::start(&mut bytes).unwrap();
    let mut encoder = Encoder::default();
    for e in &events {
        encoder.write(&mut bytes, e).unwrap();
    }
    std::fs::write(&path, &bytes).unwrap();
    let back: Vec<Event> = read(&path, Check::default())
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(back, events);
}

#[test]
fn a_key_named_twice_is_one_key_and_csv_keys_are_numbered_as_they_come() {
    use super::binary::Record;
    use super::read::records;
    let dir = tempfile::tempdir().unwrap();
    // A hand-made trace naming "k" twice (ids 0 and 1), then "j" (id 2).
    let mut bytes = super::binary::MAGIC.to_vec();
    let event = |key: u32, seq: u64| {
        let mut b = vec![b'E'];
        b.extend_from_slice(&seq.to_le_bytes());
        b.extend_from_slice(&key.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        for t in [1u64, 2, 3] {
            b.extend_from_slice(&t.to_le_bytes());
        }
        b.extend_from_slice(&200u16.to_le_bytes());
        b.extend_from_slice(&[0, 0, 0]);
        b
    };
    for name in ["k", "k", "j"] {
        bytes.push(b'K');
        bytes.extend_from_slice(&(name.len() as u16).to_le_bytes());
        bytes.extend_from_slice(name.as_bytes());
    }
    bytes.extend(event(1, 0));
    bytes.extend(event(2, 1));
    bytes.extend(event(0, 2));
    let path = dir.path().join("twice.trace");
    std::fs::write(&path, &bytes).unwrap();
    let got: Vec<String> = records(&path, Check::default())
        .unwrap()
        .map(|r| match r.unwrap() {
            Record::Key(name) => format!("key {name}"),
            Record::Event(key, e) => format!("event {} of {key}", e.seq),
        })
        .collect();
    assert_eq!(
        got,
        [
            "key k",
            "key j",
            "event 0 of 0",
            "event 1 of 1",
            "event 2 of 0"
        ]
    );
    // An event of a key never named is an error, located.
    let mut bad = super::binary::MAGIC.to_vec();
    bad.extend(event(5, 0));
    std::fs::write(&path, &bad).unwrap();
    let err = records(&path, Check::default())
        .unwrap()
        .next()
        .unwrap()
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("byte 8: an event of a key not defined before it"),
        "{err}"
    );
    // CSV: each new key is named before its first event.
    let csv = dir.path().join("keys.csv");
    std::fs::write(
        &csv,
        "seq,key,replica,intended_us,sent_us,done_us,status,outcome\n\
         0,a,0,1,2,3,200,admitted\n1,b,0,1,2,3,429,rejected\n2,a,0,1,2,3,200,admitted\n",
    )
    .unwrap();
    let got: Vec<String> = records(&csv, Check::default())
        .unwrap()
        .map(|r| match r.unwrap() {
            Record::Key(name) => format!("key {name}"),
            Record::Event(key, e) => format!("event {} of {key}", e.seq),
        })
        .collect();
    assert_eq!(
        got,
        [
            "key a",
            "event 0 of 0",
            "key b",
            "event 1 of 1",
            "event 2 of 0"
        ]
    );
}
