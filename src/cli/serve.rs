//! `cairn serve`.

use crate::app::Application;
use crate::config::Settings;

pub async fn run(settings: Settings) -> anyhow::Result<()> {
    let app = Application::build(settings).await?;
    app.run_until_stopped().await
}
