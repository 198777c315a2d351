//! A request's bytes as the template writes them: the key in each of
//! its places, tagged or sent as something else, escaped where it goes.

use super::*;

fn written(template: &Template, uri: &str, key: &str) -> Option<String> {
    let head = Head::new(template, &uri.parse().unwrap())?;
    let mut out = Vec::new();
    head.write(key, &mut out)
        .then(|| String::from_utf8(out).unwrap())
}

/// A run's arm sends its keys tagged, wherever the key goes; a key
/// sent as something else (a JWT, an address) is not; the tag is the
/// same for the same run and arm, and another for another.
#[test]
fn a_tagged_key_is_fresh_on_the_wire_and_named_as_ever() {
    let mut t = Template::new(Method::GET, Some(HeaderName::from_static("x-customer-id")));
    let tag = key_tag("rlbench-1-2", "api");
    assert_eq!(tag.len(), 6);
    assert_eq!(tag, key_tag("rlbench-1-2", "api"));
    assert_ne!(tag, key_tag("rlbench-1-2", "api2"));
    assert_ne!(tag, key_tag("rlbench-1-3", "api"));
    t.key_tag = Some(tag.clone());
    let header = written(&t, "http://127.0.0.1:1/x", "customer-7").unwrap();
    assert!(
        header.contains(&format!("x-customer-id: customer-7-{tag}\r\n")),
        "{header}"
    );
    t.key_place = KeyPlace::Query("api_key".into());
    let query = written(&t, "http://127.0.0.1:1/x", "customer-7").unwrap();
    assert!(
        query.starts_with(&format!("GET /x?api_key=customer-7-{tag} ")),
        "{query}"
    );
    // Too long to join on the stack: sent as it is.
    let long = "k".repeat(JOINED);
    assert!(written(&t, "http://127.0.0.1:1/x", &long)
        .unwrap()
        .contains(&long));
    // Sent as something else: untouched.
    t.key_place = KeyPlace::Header;
    t.wire = Some(Arc::new(
        [("customer-7".to_string(), "token".to_string())].into(),
    ));
    let minted = written(&t, "http://127.0.0.1:1/x", "customer-7").unwrap();
    assert!(minted.contains("x-customer-id: token\r\n"), "{minted}");
}

#[test]
fn a_request_is_its_line_host_headers_and_key() {
    let mut t = Template::new(Method::POST, Some(HeaderName::from_static("x-customer-id")));
    t.headers.insert(
        HeaderName::from_static("accept"),
        hyper::header::HeaderValue::from_static("*/*"),
    );
    assert_eq!(
        written(&t, "http://127.0.0.1:8080/api/transfers?x=1", "customer-7").unwrap(),
        "POST /api/transfers?x=1 HTTP/1.1\r\nhost: 127.0.0.1:8080\r\naccept: */*\r\n\
         x-customer-id: customer-7\r\ncontent-length: 0\r\n\r\n"
    );
    t.key_affix = ("Bearer ".into(), ";v=1".into());
    t.method = Method::GET;
    assert!(written(&t, "http://[::1]:9/", "k")
        .unwrap()
        .ends_with("host: [::1]:9\r\naccept: */*\r\nx-customer-id: Bearer k;v=1\r\n\r\n"));
    // No key header: no key.
    let plain = Template::new(Method::GET, None);
    assert_eq!(
        written(&plain, "http://127.0.0.1:1", "ignored").unwrap(),
        "GET / HTTP/1.1\r\nhost: 127.0.0.1:1\r\n\r\n"
    );
    // A key that is no header value is refused, not sent.
    assert_eq!(written(&t, "http://127.0.0.1:1/", "a\r\nb"), None);
}

#[test]
fn the_key_goes_into_the_path_the_query_or_a_json_body() {
    let mut t = Template::new(Method::GET, None);
    t.key_place = KeyPlace::Path {
        before: "/users/".into(),
        after: "/transfers".into(),
    };
    assert_eq!(
        written(&t, "http://127.0.0.1:1/ignored?x=1", "a b/c").unwrap(),
        "GET /users/a%20b%2Fc/transfers?x=1 HTTP/1.1\r\nhost: 127.0.0.1:1\r\n\r\n"
    );
    t.key_place = KeyPlace::Query("api_key".into());
    assert!(written(&t, "http://127.0.0.1:1/v1?x=1", "k&1")
        .unwrap()
        .starts_with("GET /v1?x=1&api_key=k%261 HTTP/1.1\r\n"));
    assert!(written(&t, "http://127.0.0.1:1/v1", "k")
        .unwrap()
        .starts_with("GET /v1?api_key=k HTTP/1.1\r\n"));
    // A login form: the key is the username, the length counts it.
    t.method = Method::POST;
    t.key_place = KeyPlace::JsonBody("username".into());
    t.body = Some(Body {
        bytes: br#"{"password":"wrong"}"#.to_vec(),
        content_type: "application/json".into(),
    });
    let login = written(&t, "http://127.0.0.1:1/login", "al\"ice").unwrap();
    let (head, body) = login.split_once("\r\n\r\n").unwrap();
    let sent: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(sent["username"], "al\"ice");
    assert_eq!(sent["password"], "wrong");
    assert!(
        head.ends_with(&format!(
            "content-type: application/json\r\ncontent-length: {}",
            body.len()
        )),
        "{head}"
    );
    // A body without a key in it, as given.
    t.key_place = KeyPlace::Header;
    t.body = Some(Body {
        bytes: b"plain".to_vec(),
        content_type: "text/plain".into(),
    });
    assert!(written(&t, "http://127.0.0.1:1/", "k")
        .unwrap()
        .ends_with("content-type: text/plain\r\ncontent-length: 5\r\n\r\nplain"));
}

#[test]
fn a_rate_limit_service_call_carries_the_key_in_its_message() {
    let mut t = Template::new(Method::POST, None);
    t.key_place = KeyPlace::Rls {
        domain: "edge".into(),
        descriptor: "customer_id".into(),
    };
    let head = Head::new(&t, &"http://127.0.0.1:1/ignored?x=1".parse().unwrap()).unwrap();
    let mut out = Vec::new();
    assert!(head.write("customer-7", &mut out));
    let at = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let (head_bytes, body) = (std::str::from_utf8(&out[..at]).unwrap(), &out[at + 4..]);
    assert_eq!(
        head_bytes,
        format!(
            "POST {} HTTP/1.1\r\nhost: 127.0.0.1:1\r\ncontent-type: application/grpc\r\n\
             te: trailers\r\ncontent-length: {}",
            super::super::rls::PATH,
            body.len()
        )
    );
    let mut expected = Vec::new();
    super::super::rls::write_request("edge", "customer_id", "customer-7", &mut expected);
    assert_eq!(body, expected);
    assert_eq!(
        t.key_in().unwrap(),
        "the rate-limit descriptor customer_id (domain edge) of a ShouldRateLimit call"
    );
}

#[test]
fn what_is_sent_in_a_keys_place_comes_from_its_wire_table() {
    let mut t = Template::new(
        Method::GET,
        Some(HeaderName::from_static("x-forwarded-for")),
    );
    t.wire = Some(Arc::new(
        [("customer-1".to_string(), "10.0.0.2".to_string())].into(),
    ));
    assert!(written(&t, "http://127.0.0.1:1/", "customer-1")
        .unwrap()
        .ends_with("x-forwarded-for: 10.0.0.2\r\n\r\n"));
    // A key without an entry is not sent under its bare name.
    assert_eq!(written(&t, "http://127.0.0.1:1/", "customer-2"), None);
    // Beside a forged key, the principal's own token.
    t.wire = None;
    t.key_header = Some(HeaderName::from_static("x-customer-id"));
    t.beside.push(Beside {
        name: hyper::header::AUTHORIZATION,
        prefix: "Bearer ".into(),
        values: Arc::new([("customer-1~0003".to_string(), "t.o.k".to_string())].into()),
    });
    assert!(written(&t, "http://127.0.0.1:1/", "customer-1~0003")
        .unwrap()
        .ends_with("x-customer-id: customer-1~0003\r\nauthorization: Bearer t.o.k\r\n\r\n"));
    assert_eq!(written(&t, "http://127.0.0.1:1/", "customer-1~0004"), None);
    assert_eq!(content_type_of(b"{\"a\": 1}"), "application/json");
    assert!(content_type_of(b"a=1").starts_with("text/plain"));
}
