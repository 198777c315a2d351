//! Reading an HTTP/1.1 answer off a keep-alive connection, the way wrk
//! does: into one buffer the connection keeps, the head parsed in place by
//! `httparse` (no header map, no allocation), only the status and the
//! rate-limit headers kept, and the body skipped by its length, its
//! chunks (`httparse::parse_chunk_size`) or the connection's end. 1xx
//! answers are skipped; HEAD, 204 and 304 answers have no body.

use crate::events::advertised::{self, Advertised};
use crate::events::ErrorKind;
use crate::load::outcome::error_kind;
use tokio::io::{AsyncRead, AsyncReadExt};

/// Headers read from one answer, at most (more is an error).
const MAX_HEADERS: usize = 64;
/// The buffer; an answer's head must fit in it.
const BUFFER: usize = 16 * 1024;

/// One answer's head, as far as it matters here.
#[derive(Debug, PartialEq)]
pub(super) struct Head {
    pub status: u16,
    pub advertised: Option<Advertised>,
    /// The connection can carry the next request.
    pub reusable: bool,
}

enum Body {
    None,
    Length(u64),
    Chunked,
    /// Until the server closes the connection.
    ToEnd,
}

/// A connection's read buffer: bytes `start..end` are read, not yet used.
pub(super) struct Reader {
    buf: Box<[u8]>,
    start: usize,
    end: usize,
}

impl Reader {
    pub(super) fn new() -> Self {
        Reader {
            buf: vec![0; BUFFER].into_boxed_slice(),
            start: 0,
            end: 0,
        }
    }

    /// Forgets what was read (a new connection).
    pub(super) fn reset(&mut self) {
        (self.start, self.end) = (0, 0);
    }

    /// Reads more; false at the connection's end.
    async fn fill(&mut self, io: &mut (impl AsyncRead + Unpin)) -> Result<bool, ErrorKind> {
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
        } else if self.end == self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            (self.start, self.end) = (0, self.end - self.start);
        }
        if self.end == self.buf.len() {
            // A head larger than the whole buffer.
            return Err(ErrorKind::Other);
        }
        let n = io
            .read(&mut self.buf[self.end..])
            .await
            .map_err(|e| error_kind(&e))?;
        self.end += n;
        Ok(n > 0)
    }

    /// Reads one whole answer; `head_only` for a request whose answer has
    /// no body (HEAD).
    pub(super) async fn answer(
        &mut self,
        io: &mut (impl AsyncRead + Unpin),
        head_only: bool,
    ) -> Result<Head, ErrorKind> {
        loop {
            let (head, body) = loop {
                match self.parse(head_only)? {
                    Some(parsed) => break parsed,
                    // Cut short before a whole head: the server closed.
                    None if !self.fill(io).await? => return Err(ErrorKind::Closed),
                    None => {}
                }
            };
            let Some(head) = head else {
                // A 1xx answer: the real one follows.
                continue;
            };
            let ended = self.skip(io, body).await?;
            return Ok(Head {
                reusable: head.reusable && !ended,
                ..head
            });
        }
    }

    /// The head at the buffer's start, consumed: `None` until it is all
    /// there; `Some((None, _))` for a 1xx answer.
    fn parse(&mut self, head_only: bool) -> Result<Option<(Option<Head>, Body)>, ErrorKind> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut headers);
        let used = match response.parse(&self.buf[self.start..self.end]) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(_) => return Err(ErrorKind::Other),
        };
        let status = response.code.unwrap_or(0);
        let headers = &*response.headers;
        let get_all = |name: &'static str| {
            headers
                .iter()
                .filter(move |h| h.name.eq_ignore_ascii_case(name))
                .map(|h| h.value)
        };
        let get = |name| get_all(name).next();
        let has_token = |name: &str, token: &str| {
            headers
                .iter()
                .filter(|h| h.name.eq_ignore_ascii_case(name))
                .flat_map(|h| h.value.split(|&b| b == b','))
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
        };
        let parsed = if (100..200).contains(&status) && status != 101 {
            (None, Body::None)
        } else {
            let body = if head_only || status == 204 || status == 304 || status == 101 {
                Body::None
            } else if has_token("transfer-encoding", "chunked") {
                Body::Chunked
            } else if let Some(v) = get("content-length") {
                let n = std::str::from_utf8(v)
                    .ok()
                    .and_then(|t| t.trim().parse().ok())
                    .ok_or(ErrorKind::Other)?;
                Body::Length(n)
            } else {
                Body::ToEnd
            };
            let keep_alive = match response.version {
                Some(0) => has_token("connection", "keep-alive"),
                _ => !has_token("connection", "close"),
            };
            let head = Head {
                status,
                advertised: advertised::parse_with(get_all),
                reusable: keep_alive && status != 101 && !matches!(body, Body::ToEnd),
            };
            (Some(head), body)
        };
        self.start += used;
        Ok(Some(parsed))
    }

    /// Skips a body; true when the connection ended with it.
    async fn skip(
        &mut self,
        io: &mut (impl AsyncRead + Unpin),
        body: Body,
    ) -> Result<bool, ErrorKind> {
        match body {
            Body::None => Ok(false),
            Body::Length(n) => self.skip_bytes(io, n).await.map(|()| false),
            Body::ToEnd => {
                (self.start, self.end) = (0, 0);
                while self.fill(io).await? {
                    (self.start, self.end) = (0, 0);
                }
                Ok(true)
            }
            Body::Chunked => loop {
                let size = loop {
                    match httparse::parse_chunk_size(&self.buf[self.start..self.end]) {
                        Ok(httparse::Status::Complete((used, size))) => {
                            self.start += used;
                            break size;
                        }
                        Ok(httparse::Status::Partial) => {
                            if !self.fill(io).await? {
                                return Err(ErrorKind::Closed);
                            }
                        }
                        Err(_) => return Err(ErrorKind::Other),
                    }
                };
                if size == 0 {
                    self.skip_trailers(io).await?;
                    return Ok(false);
                }
                // The chunk and the CRLF after it.
                self.skip_bytes(io, size + 2).await?;
            },
        }
    }

    async fn skip_bytes(
        &mut self,
        io: &mut (impl AsyncRead + Unpin),
        mut n: u64,
    ) -> Result<(), ErrorKind> {
        loop {
            let here = ((self.end - self.start) as u64).min(n);
            self.start += here as usize;
            n -= here;
            if n == 0 {
                return Ok(());
            }
            if !self.fill(io).await? {
                return Err(ErrorKind::Closed);
            }
        }
    }

    /// Trailer lines after the last chunk, up to the empty line.
    async fn skip_trailers(&mut self, io: &mut (impl AsyncRead + Unpin)) -> Result<(), ErrorKind> {
        loop {
            match self.buf[self.start..self.end]
                .windows(2)
                .position(|w| w == b"\r\n")
            {
                Some(0) => {
                    self.start += 2;
                    return Ok(());
                }
                Some(at) => self.start += at + 2,
                None => {
                    if !self.fill(io).await? {
                        return Err(ErrorKind::Closed);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads answers from `bytes` delivered in pieces of `piece` bytes.
    fn answers(bytes: &[u8], piece: usize, head_only: bool) -> Vec<Result<Head, ErrorKind>> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut b = tokio_test_io(bytes, piece);
            let mut r = Reader::new();
            let mut out = Vec::new();
            loop {
                let a = r.answer(&mut b, head_only).await;
                let stop = a.as_ref().map_or(true, |h| !h.reusable);
                out.push(a);
                if stop {
                    return out;
                }
            }
        })
    }

    /// An in-memory stream giving `bytes` a piece at a time, then its end.
    fn tokio_test_io(bytes: &[u8], piece: usize) -> impl AsyncRead + Unpin {
        let pieces: Vec<Vec<u8>> = bytes.chunks(piece.max(1)).map(<[u8]>::to_vec).collect();
        Pieces { pieces, at: 0 }
    }

    struct Pieces {
        pieces: Vec<Vec<u8>>,
        at: usize,
    }

    impl AsyncRead for Pieces {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            if let Some(p) = self.pieces.get(self.at) {
                buf.put_slice(p);
                self.at += 1;
            }
            std::task::Poll::Ready(Ok(()))
        }
    }

    fn status(a: &Result<Head, ErrorKind>) -> (u16, bool) {
        let h = a.as_ref().unwrap();
        (h.status, h.reusable)
    }

    #[test]
    fn keep_alive_answers_follow_each_other_in_any_pieces() {
        let stream = b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nok\n\
HTTP/1.1 100 Continue\r\n\r\n\
HTTP/1.1 429 Too Many Requests\r\nRetry-After: 2\r\nRateLimit: \"day\";r=9\r\n\
ratelimit: \"burst\";r=0;t=1\r\nTransfer-Encoding: chunked\r\n\r\n\
4\r\nslow\r\n6;x=y\r\n down\n\r\n0\r\nx-trailer: 1\r\n\r\n\
HTTP/1.1 204 No Content\r\n\r\n\
HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
        for piece in [1, 2, 7, 64, stream.len()] {
            let got = answers(stream, piece, false);
            let statuses: Vec<(u16, bool)> = got.iter().map(status).collect();
            assert_eq!(
                statuses,
                [(200, true), (429, true), (204, true), (503, false)],
                "in pieces of {piece}"
            );
            let told = got[1].as_ref().unwrap().advertised.unwrap();
            assert_eq!(told.retry_after_ms, Some(2_000));
            // Both lines of the split RateLimit field are read: the least r binds.
            assert_eq!((told.remaining, told.reset_ms), (Some(0), Some(1_000)));
            assert_eq!(got[0].as_ref().unwrap().advertised, None);
        }
    }

    #[test]
    fn bodies_without_a_length_end_the_connection_and_heads_have_none() {
        let got = answers(b"HTTP/1.1 200 OK\r\n\r\nall of it until the end", 5, false);
        assert_eq!(got.iter().map(status).collect::<Vec<_>>(), [(200, false)]);
        // HTTP/1.0 closes unless told to keep alive.
        let got = answers(b"HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n", 3, false);
        assert_eq!(got.iter().map(status).collect::<Vec<_>>(), [(200, false)]);
        let got = answers(
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\ncontent-length: 0\r\n\r\n",
            3,
            false,
        );
        assert_eq!(status(&got[0]), (200, true));
        // An answer to HEAD names a length but sends no body.
        let two = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nHTTP/1.1 404 Not Found\r\ncontent-length: 5\r\n\r\n";
        let got = answers(two, 4, true);
        assert_eq!(status(&got[0]), (200, true));
        assert_eq!(status(&got[1]), (404, true));
    }

    #[test]
    fn answers_cut_short_or_garbled_are_errors() {
        let got = answers(b"HTTP/1.1 200 OK\r\ncontent-le", 4, false);
        assert_eq!(got, [Err(ErrorKind::Closed)]);
        let got = answers(
            b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nshort",
            4,
            false,
        );
        assert_eq!(got, [Err(ErrorKind::Closed)]);
        let got = answers(b"SMTP ready\r\n\r\n", 4, false);
        assert_eq!(got, [Err(ErrorKind::Other)]);
        let got = answers(
            b"HTTP/1.1 200 OK\r\ncontent-length: many\r\n\r\n",
            64,
            false,
        );
        assert_eq!(got, [Err(ErrorKind::Other)]);
        // A head that does not fit the buffer.
        let mut huge = b"HTTP/1.1 200 OK\r\nx: ".to_vec();
        huge.extend(std::iter::repeat(b'a').take(BUFFER));
        let got = answers(&huge, 1024, false);
        assert_eq!(got, [Err(ErrorKind::Other)]);
    }
}
