//! Downstream servers over https (docs/registry.md): a TLS front made here — a certificate
//! authority and a certificate for 127.0.0.1 and localhost, made by the test — before a
//! real MCP server (`tmws serve`'s `/mcp`), trusted by tmws through `SSL_CERT_FILE`.

use std::net::SocketAddr;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use serde_json::{Value, json};
use tokio::io::copy_bidirectional;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::{self, pki_types::PrivateKeyDer};

use super::clients::Serve;
use super::util::{TestRoot, user_config};

/// A TLS front on a loopback port that forwards every connection to `backend` (plain
/// HTTP), with the PEM of the authority that signed its certificate.
struct TlsFront {
    port: u16,
    ca_pem: String,
    _rt: tokio::runtime::Runtime,
}

fn front(backend: SocketAddr) -> TlsFront {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
        .unwrap()
        .signed_by(&leaf_key, &issuer)
        .unwrap();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone(), ca_cert.der().clone()],
            PrivateKeyDer::try_from(leaf_key.serialize_der()).unwrap(),
        )
        .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let port = listener.local_addr().unwrap().port();
    rt.spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                let Ok(mut plain) = TcpStream::connect(backend).await else { return };
                let _ = copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    TlsFront { port, ca_pem: ca_cert.pem(), _rt: rt }
}

/// Runs tmws with the test's authority as the only one it trusts.
fn tmws_trusting(root: &TestRoot, ca: &std::path::Path, args: &[&str]) -> super::util::Output {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tmws"))
        .env("TMWS_CONFIG_HOME", user_config())
        .env("SSL_CERT_FILE", ca)
        .env_remove("SSL_CERT_DIR")
        .env_remove("TMWS_LOG")
        .args(args)
        .current_dir(root.path())
        .output()
        .unwrap();
    super::util::Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Regression: `https://` servers failed ("this build has no TLS").
#[test]
fn an_https_server_is_introspected_and_called() {
    // The downstream server: another root's `tmws serve`, behind TLS.
    let remote = TestRoot::sample();
    let serve = Serve::start(remote.path(), Some("a-token-long-enough-to-be-accepted-here"));
    let backend: SocketAddr = serve.url.trim_start_matches("http://").parse().unwrap();
    let tls = front(backend);
    let root = TestRoot::new();
    let ca = root.path().join("ca.pem");
    std::fs::write(&ca, &tls.ca_pem).unwrap();
    root.write(
        ".vscode/mcp.json",
        format!(
            "{{\n  // the sample root, over https\n  \"servers\": {{\n    \"remote\": {{\"type\": \"http\", \"url\": \"https://localhost:{}/mcp\", \"headers\": {{\"Authorization\": \"Bearer ${{env:REMOTE_TOKEN}}\"}}}},\n  }},\n}}\n",
            tls.port
        ),
    );
    let built = tmws_trusting(&root, &ca, &["--json", "registry", "build", "--yes"]);
    assert_eq!(built.code, 1, "without the token the server refuses: {}{}", built.stdout, built.stderr);
    // With the token in the environment, as VS Code's `${env:…}` says.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tmws"))
        .env("TMWS_CONFIG_HOME", user_config())
        .env("SSL_CERT_FILE", &ca)
        .env("REMOTE_TOKEN", "a-token-long-enough-to-be-accepted-here")
        .args(["--json", "registry", "build", "--yes"])
        .current_dir(root.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((&rows[0]["server"], &rows[0]["status"]), (&json!("remote"), &json!("introspected")));
    assert!(rows[0]["tools"].as_u64().unwrap() >= 10, "{rows}");
    let registry = root.read(".tmws/registry/index.json");
    assert!(!registry.contains("a-token-long-enough"), "the token is not stored: {registry}");

    let call = std::process::Command::new(env!("CARGO_BIN_EXE_tmws"))
        .env("TMWS_CONFIG_HOME", user_config())
        .env("SSL_CERT_FILE", &ca)
        .env("REMOTE_TOKEN", "a-token-long-enough-to-be-accepted-here")
        .args([
            "--json",
            "registry",
            "call",
            "remote",
            "workspace_search",
            r#"{"query": "connection pool", "format": "json"}"#,
        ])
        .current_dir(root.path())
        .output()
        .unwrap();
    assert!(
        call.status.success(),
        "{}{}",
        String::from_utf8_lossy(&call.stdout),
        String::from_utf8_lossy(&call.stderr)
    );
    assert!(String::from_utf8_lossy(&call.stdout).contains("refId"), "{}", String::from_utf8_lossy(&call.stdout));

    // A certificate nobody vouched for is refused, with a message that says so.
    let untrusted = root.path().join("other.pem");
    std::fs::write(&untrusted, front(backend).ca_pem).unwrap();
    let refused = tmws_trusting(&root, &untrusted, &["--json", "registry", "build", "--yes", "--force"]);
    assert_eq!(refused.code, 1);
    assert!(refused.stdout.contains("invalid peer certificate"), "{}", refused.stdout);
}
