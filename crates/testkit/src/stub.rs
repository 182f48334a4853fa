//! Serving a fake upstream (an embeddings or chat-completion stub) over HTTP on loopback, in
//! this process: cairn's real clients talk to it through their whole HTTP stack.

use anyhow::Context as _;
use poem::{listener::Acceptor, listener::Listener, Endpoint, IntoEndpoint};

/// Serves `app` on 127.0.0.1:0 until the process ends; returns `http://127.0.0.1:<port>`.
pub async fn serve<E>(app: E) -> anyhow::Result<String>
where
    E: IntoEndpoint + Send + 'static,
    E::Endpoint: Endpoint + 'static,
{
    let acceptor = poem::listener::TcpListener::bind("127.0.0.1:0")
        .into_acceptor()
        .await?;
    let port = acceptor
        .local_addr()
        .first()
        .and_then(|a| a.as_socket_addr().map(|s| s.port()))
        .context("the stub has no port")?;
    tokio::spawn(poem::Server::new_with_acceptor(acceptor).run(app));
    Ok(format!("http://127.0.0.1:{port}"))
}
