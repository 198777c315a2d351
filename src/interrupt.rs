//! Ctrl-C and SIGTERM as a value every stage can wait on: the load stops
//! scheduling, the stack comes down, and what was recorded is reported.

use tokio::sync::watch;

#[derive(Clone)]
pub(crate) struct Interrupt {
    rx: watch::Receiver<bool>,
}

impl Interrupt {
    /// Starts listening for SIGINT and SIGTERM.
    pub(crate) fn listen() -> Self {
        let (tx, rx) = watch::channel(false);
        tokio::spawn(async move {
            #[cfg(unix)]
            let terminate = async {
                use tokio::signal::unix::{signal, SignalKind};
                match signal(SignalKind::terminate()) {
                    Ok(mut s) => {
                        s.recv().await;
                    }
                    Err(_) => std::future::pending::<()>().await,
                }
            };
            #[cfg(not(unix))]
            let terminate = std::future::pending::<()>();
            let ctrl_c = async {
                if tokio::signal::ctrl_c().await.is_err() {
                    std::future::pending::<()>().await;
                }
            };
            tokio::select! {
                () = ctrl_c => {}
                () = terminate => {}
            }
            let _ = tx.send(true);
            // Keep the sender alive: a dropped sender must not read as a signal.
            std::future::pending::<()>().await;
        });
        Interrupt { rx }
    }

    pub(crate) fn fired(&self) -> bool {
        *self.rx.borrow()
    }

    /// Resolves once a signal has arrived.
    pub(crate) async fn wait(&self) {
        let mut rx = self.rx.clone();
        if rx.wait_for(|fired| *fired).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
