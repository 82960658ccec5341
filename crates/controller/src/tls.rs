//! Webhook TLS without cert-manager: a certificate authority of the controller's own (kept in
//! a Secret so every replica signs with the same one), a serving certificate per replica
//! signed by it, and the authority's certificate as the webhook configuration's `caBundle`.
//! With cert-manager (or any other issuer) the serving certificate comes from files instead.

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use std::sync::Arc;
use tokio_rustls::rustls;

/// A certificate authority: its certificate and private key, both PEM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authority {
    /// The certificate (what API servers trust: the webhook's `caBundle`).
    pub cert_pem: String,
    /// The private key.
    pub key_pem: String,
}

/// A serving certificate and its key, PEM.
#[derive(Debug, Clone)]
pub struct Serving {
    /// Certificate chain (the leaf).
    pub cert_pem: String,
    /// Private key.
    pub key_pem: String,
}

/// TLS errors.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Making or reading a certificate or key failed.
    #[error("certificate: {0}")]
    Cert(#[from] rcgen::Error),
    /// The PEM given is not a certificate or key rustls can use.
    #[error("TLS configuration: {0}")]
    Rustls(String),
}

/// The authority's subject: fixed, so that the same key re-creates the same issuer.
fn authority_params() -> Result<CertificateParams, Error> {
    let mut p = CertificateParams::new(Vec::<String>::new())?;
    p.distinguished_name
        .push(DnType::CommonName, "wlmap-controller webhook CA");
    p.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    // Ten years: rotating means deleting the Secret (replicas then make and publish a new one).
    p.not_before = rcgen::date_time_ymd(2025, 1, 1);
    p.not_after = rcgen::date_time_ymd(2035, 1, 1);
    Ok(p)
}

impl Authority {
    /// A new authority.
    ///
    /// ```
    /// let ca = wlmap_controller::tls::Authority::generate().unwrap();
    /// assert!(ca.cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
    /// ```
    pub fn generate() -> Result<Authority, Error> {
        let key = KeyPair::generate()?;
        let cert = authority_params()?.self_signed(&key)?;
        Ok(Authority {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// A serving certificate for these DNS names and IP addresses, signed by this authority,
    /// valid for a year (a replica makes a new one each time it starts).
    ///
    /// ```
    /// let ca = wlmap_controller::tls::Authority::generate().unwrap();
    /// let s = ca.serving(&["wlmap.wlmap-system.svc".into(), "127.0.0.1".into()]).unwrap();
    /// assert!(s.cert_pem.contains("BEGIN CERTIFICATE"));
    /// ```
    pub fn serving(&self, names: &[String]) -> Result<Serving, Error> {
        let ca_key = KeyPair::from_pem(&self.key_pem)?;
        let issuer = Issuer::new(authority_params()?, ca_key);
        let mut p = CertificateParams::new(names.to_vec())?;
        p.distinguished_name.push(
            DnType::CommonName,
            names.first().cloned().unwrap_or_default(),
        );
        p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        p.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let now = std::time::SystemTime::now();
        p.not_before = (now - std::time::Duration::from_secs(3600)).into();
        p.not_after = (now + std::time::Duration::from_secs(365 * 24 * 3600)).into();
        let key = KeyPair::generate()?;
        let cert = p.signed_by(&key, &issuer)?;
        Ok(Serving {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

/// A rustls server configuration for a certificate and key (PEM).
pub fn server_config(cert_pem: &str, key_pem: &str) -> Result<Arc<rustls::ServerConfig>, Error> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| Error::Rustls(format!("certificate: {e}")))?;
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
        .map_err(|e| Error::Rustls(format!("key: {e}")))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Rustls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| Error::Rustls(e.to_string()))?;
    Ok(Arc::new(config))
}
