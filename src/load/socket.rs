//! A TCP connection to a target, from a key's own local address when it
//! has one (`[load] key = { source_ip }`), else from whatever the system
//! picks.

use tokio::net::TcpStream;

/// A TCP connection to `host:port`, from `bind` when given.
pub(crate) async fn tcp(
    host: &str,
    port: u16,
    bind: Option<std::net::IpAddr>,
) -> std::io::Result<TcpStream> {
    let Some(bind) = bind else {
        return TcpStream::connect((host, port)).await;
    };
    let to = tokio::net::lookup_host((host, port))
        .await?
        .find(|a| a.is_ipv4() == bind.is_ipv4())
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::AddrNotAvailable,
                format!("{host} has no address of {bind}'s family"),
            )
        })?;
    let socket = if bind.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.bind(std::net::SocketAddr::new(bind, 0))?;
    socket.connect(to).await
}
