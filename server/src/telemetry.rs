use tracing_subscriber::EnvFilter;

/// Structured logs on stderr: JSON in production, human-readable in development.
/// `RUST_LOG` overrides the default level (`info`).
pub fn init(json: bool) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // A second initialisation (tests) is harmless: keep the first subscriber.
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}
