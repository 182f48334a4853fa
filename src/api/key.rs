//! [`ApiKey`]: the caller of a `/v1` route as the key guard (`auth::RequireKey`) authenticated
//! it, and the spec's declaration that the route needs `Authorization: Bearer <key>` — so
//! Swagger UI's Authorize button and generated clients send the key.

use std::ops::Deref;

use poem::{Request, RequestBody};
use poem_openapi::registry::{MetaSecurityScheme, Registry};
use poem_openapi::{ApiExtractor, ApiExtractorType, ExtractParamOptions};

use crate::auth::Principal;
use crate::error::{ApiError, Code};

/// The name of the bearer scheme in the spec.
pub const SCHEME: &str = "ApiKey";

/// The authenticated caller of a route that needs an API key.
pub struct ApiKey(pub Principal);

impl Deref for ApiKey {
    type Target = Principal;
    fn deref(&self) -> &Principal {
        &self.0
    }
}

impl<'a> ApiExtractor<'a> for ApiKey {
    const TYPES: &'static [ApiExtractorType] = &[ApiExtractorType::SecurityScheme];

    type ParamType = ();
    type ParamRawType = ();

    fn register(registry: &mut Registry) {
        registry.create_security_scheme(
            SCHEME,
            MetaSecurityScheme {
                ty: "http",
                description: Some(
                    "A project key: `cairn keys create --project <p> --scope read|write|admin`.",
                ),
                name: None,
                key_in: None,
                scheme: Some("bearer"),
                bearer_format: Some("cairn_<id>_<secret>"),
                flows: None,
                openid_connect_url: None,
            },
        );
    }

    fn security_schemes() -> Vec<&'static str> {
        vec![SCHEME]
    }

    async fn from_request(
        request: &'a Request,
        _body: &mut RequestBody,
        _param_opts: ExtractParamOptions<Self::ParamType>,
    ) -> poem::Result<Self> {
        // The guard in front of every `/v1` route has put it there (the insecure local mode
        // included); its absence is a routing mistake, answered like a missing key.
        request
            .extensions()
            .get::<Principal>()
            .cloned()
            .map(Self)
            .ok_or_else(|| {
                poem::Error::from_response(super::error::error_response(&ApiError::new(
                    Code::Unauthorized,
                )))
            })
    }
}
