//! `periscope signin`: the sign-in service (the OpenID Connect provider of `crates/signin`) in
//! a process of its own, for a `periscope serve` elsewhere that points its `[web]` settings at
//! it. The embedded default needs none of this: `serve` mounts the same service under `/auth`.
//!
//! It registers one client, the Periscope application at `--app-url`: client id
//! `periscope-web`, its secret from `DATA/web-client-secret` (generated on first start, mode
//! 0600 — give the same value to that `serve` as `web.client_secret`), redirect URI
//! `{app}/oidc/callback`, post-logout redirect URI `{app}/signed-out`. Its accounts live in
//! the configured database (`database_url`, default `DATA/state.db`, tables `signin_*`); mail
//! follows the `[signin]` settings, as in `serve`. See docs/signin.md.

use std::net::SocketAddr;
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow};
use periscope_signin::{ClientConfig, Config as SignInConfig, SignIn};
use periscope_web::WebConfig;

use crate::config::{ConfigArgs, StateFlags};
use crate::serve::{
    WEB_CLIENT_ID, apply_signin_settings, init_logging, mail_config, shutdown_signal,
    web_client_secret,
};

/// Arguments of `periscope signin`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Point the application at it with `[web] issuer`, `client_id = \
    \"periscope-web\"` and `client_secret` (the content of DIR/web-client-secret). See \
    docs/signin.md."
)]
pub(crate) struct Args {
    #[command(flatten)]
    config: ConfigArgs<StateFlags>,
    /// Address to listen on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8081")]
    listen: SocketAddr,
    /// The issuer, as browsers and the application reach this service [default:
    /// http://ADDR, the listening address].
    #[arg(long, value_name = "URL")]
    issuer: Option<String>,
    /// The public URL of the Periscope application this service signs users in for.
    #[arg(long, value_name = "URL")]
    app_url: String,
}

/// Runs `periscope signin`.
pub(crate) fn run(args: &Args) -> Result<ExitCode> {
    let config = args.config.load()?;
    init_logging(config.log_format)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("periscope-signin")
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let address = listener
            .local_addr()
            .context("cannot read the listening address")?;
        let issuer = args
            .issuer
            .clone()
            .unwrap_or_else(|| format!("http://{address}"));
        let app_url = args.app_url.trim_end_matches('/');
        // The application's own settings check the URL and give its callback addresses.
        let secret = web_client_secret(&config.data)?;
        let app = WebConfig::new(app_url, &issuer, WEB_CLIENT_ID, &secret);
        if !(app_url.starts_with("http://") || app_url.starts_with("https://")) {
            return Err(anyhow!(
                "--app-url {app_url:?} is not an http:// or https:// URL"
            ));
        }
        let database = match &config.database_url {
            Some(url) => url.clone(),
            None => config.data.join("state.db").display().to_string(),
        };
        let mut signin_config = SignInConfig::new(&issuer, database, mail_config(&config)?);
        signin_config.clients.push(ClientConfig {
            client_id: WEB_CLIENT_ID.into(),
            client_secret: secret,
            redirect_uris: vec![app.callback_url()],
            post_logout_redirect_uris: vec![app.signed_out_url()],
        });
        signin_config.application_url = Some(format!("{app_url}/"));
        apply_signin_settings(&config, &mut signin_config);
        let signin = SignIn::open(signin_config)
            .await
            .context("cannot start the sign-in service")?;
        let signal = shutdown_signal()?;
        tracing::info!(issuer = %issuer, address = %address, app = %app_url, "sign-in service listening");
        eprintln!("periscope: sign-in service {issuer} listening on {address} for {app_url}");
        axum::serve(
            listener,
            signin
                .standalone_router()
                .into_make_service_with_connect_info::<SocketAddr>(),
        )
        .with_graceful_shutdown(signal)
        .await
        .context("the sign-in service failed")?;
        tracing::info!("shutting down");
        signin.close().await;
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(ExitCode::SUCCESS)
}
