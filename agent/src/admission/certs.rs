//! The webhook's serving certificate.
//!
//! Two sources:
//!
//! - **self-signed** ([`SelfSignedCa`]): at start the agent creates a CA and
//!   a serving certificate signed by it, and injects the CA into the
//!   ValidatingWebhookConfiguration it owns. Before the serving certificate
//!   expires (at two thirds of its validity) a new CA and serving
//!   certificate replace them. The new CA is also *cross-signed* by the old
//!   one and served as an intermediate, so the new chain verifies against
//!   either CA bundle: the API server keeps calling successfully whether or
//!   not it has seen the updated `caBundle` yet. No timing assumption.
//! - **files** ([`load_pem_files`]): a certificate and key supplied by the
//!   operator (cert-manager Secret volume or plain files), re-read when their
//!   content changes.
//!
//! Either way the TLS server asks a [`SwappableResolver`] for the certificate
//! on every handshake, so a new one takes effect for the next connection
//! without restarting the listener; established connections are unaffected.

use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use tokio_rustls::rustls;
use tokio_rustls::rustls::crypto::CryptoProvider;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::server::{ClientHello, ResolvesServerCert};
use tokio_rustls::rustls::sign::CertifiedKey;

/// Certificate problems.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// rcgen refused to build a certificate.
    #[error("generating a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// rustls refused the certificate or key.
    #[error("loading the certificate into TLS: {0}")]
    Tls(#[from] rustls::Error),
    /// A file could not be read or parsed.
    #[error("{path}: {detail}")]
    File {
        /// The file.
        path: String,
        /// What went wrong.
        detail: String,
    },
    /// A validity too short to be useful or too long to compute.
    #[error("invalid certificate validity {0:?}")]
    Validity(Duration),
}

/// The crypto provider the webhook serves with (ring, as kube's client).
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Backdating of `notBefore`, for clocks that are slightly apart.
const BACKDATE: Duration = Duration::from_secs(300);

/// Options of the self-signed mode.
#[derive(Clone, Debug)]
pub struct SelfSignedOptions {
    /// Subject alternative names of the serving certificate: DNS names or
    /// IP addresses (what the API server dials).
    pub names: Vec<String>,
    /// Validity of a serving certificate; it is replaced at two thirds of
    /// it. A CA is valid for twice as long (it must outlive the next
    /// generation's cross-signed chain).
    pub validity: Duration,
}

/// One generation: a CA and the serving certificate it signed.
struct Generation {
    ca_name: String,
    ca_pem: String,
    ca_not_after: SystemTime,
    ca: Issuer<'static, KeyPair>,
    served: Arc<CertifiedKey>,
    rotate_at: SystemTime,
}

/// The self-signed CA and its current serving certificate.
pub struct SelfSignedCa {
    options: SelfSignedOptions,
    current: Generation,
    previous_ca: Option<(String, SystemTime)>,
    generation: u64,
}

impl std::fmt::Debug for SelfSignedCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SelfSignedCa")
            .field("names", &self.options.names)
            .field("generation", &self.generation)
            .field("rotate_at", &self.current.rotate_at)
            .finish_non_exhaustive()
    }
}

fn offset(t: SystemTime) -> time::OffsetDateTime {
    time::OffsetDateTime::from(t)
}

fn unique_suffix() -> String {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    format!("{}.{:09}", now.as_secs(), now.subsec_nanos())
}

fn generation(
    options: &SelfSignedOptions,
    signer: Option<&Generation>,
    provider: &CryptoProvider,
) -> Result<Generation, CertError> {
    let now = SystemTime::now();
    let validity = options.validity;
    if validity < Duration::from_secs(3) || validity > Duration::from_secs(20 * 365 * 86400) {
        return Err(CertError::Validity(validity));
    }
    let not_before = now.checked_sub(BACKDATE).unwrap_or(now);
    let leaf_not_after = now + validity;
    let ca_not_after = now + validity * 2;

    // A CA with a unique name per generation, so chains are never ambiguous.
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "berth");
    let ca_name = format!("berth-agent-webhook-ca {}", unique_suffix());
    dn.push(DnType::CommonName, ca_name.clone());
    ca_params.distinguished_name = dn;
    // Unconstrained: the next generation's CA is cross-signed by this one.
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    ca_params.not_before = offset(not_before);
    ca_params.not_after = offset(ca_not_after);
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let ca_pem = ca_cert.pem();

    // The same CA, signed by the previous one (valid no longer than it).
    let cross = match signer {
        Some(prev) => {
            let mut p = ca_params.clone();
            p.not_after = offset(ca_not_after.min(prev.ca_not_after));
            Some(p.signed_by(&ca_key, &prev.ca)?)
        }
        None => None,
    };

    let leaf_key = KeyPair::generate()?;
    let mut leaf = CertificateParams::new(Vec::<String>::new())?;
    for name in &options.names {
        leaf.subject_alt_names.push(match name.parse() {
            Ok(ip) => SanType::IpAddress(ip),
            Err(_) => SanType::DnsName(name.clone().try_into()?),
        });
    }
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "berth");
    dn.push(
        DnType::CommonName,
        options
            .names
            .first()
            .cloned()
            .unwrap_or_else(|| "berth-agent-webhook".into()),
    );
    leaf.distinguished_name = dn;
    leaf.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    leaf.use_authority_key_identifier_extension = true;
    leaf.not_before = offset(not_before);
    leaf.not_after = offset(leaf_not_after);
    let ca = Issuer::new(ca_params, ca_key);
    let leaf_cert = leaf.signed_by(&leaf_key, &ca)?;

    let mut chain = vec![leaf_cert.der().clone()];
    if let Some(cross) = cross {
        chain.push(cross.der().clone());
    }
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let served = Arc::new(CertifiedKey::from_der(chain, key, provider)?);
    Ok(Generation {
        ca_name,
        ca_pem,
        ca_not_after,
        ca,
        served,
        rotate_at: now + validity * 2 / 3,
    })
}

impl SelfSignedCa {
    /// A fresh CA and serving certificate.
    pub fn new(options: SelfSignedOptions) -> Result<Self, CertError> {
        let current = generation(&options, None, &provider())?;
        Ok(Self {
            options,
            current,
            previous_ca: None,
            generation: 1,
        })
    }

    /// Replaces the CA and serving certificate; the new CA is cross-signed
    /// by the old one, whose certificate stays in [`Self::ca_bundle`] until
    /// it expires or the next rotation.
    pub fn rotate(&mut self) -> Result<(), CertError> {
        let next = generation(&self.options, Some(&self.current), &provider())?;
        let old = std::mem::replace(&mut self.current, next);
        self.previous_ca = Some((old.ca_pem, old.ca_not_after));
        self.generation += 1;
        Ok(())
    }

    /// The PEM CA bundle for the webhook configuration: the current CA, and
    /// the previous one while it is still valid.
    #[cfg(test)]
    pub fn ca_bundle(&self) -> String {
        self.own_cas().concat()
    }

    /// This agent's CAs (PEM): the current one, and the previous one while
    /// it is still valid.
    pub fn own_cas(&self) -> Vec<String> {
        let mut out = vec![self.current.ca_pem.clone()];
        if let Some((pem, not_after)) = &self.previous_ca
            && *not_after > SystemTime::now()
        {
            out.push(pem.clone());
        }
        out
    }

    /// The certificate chain and key to serve.
    pub fn certified_key(&self) -> Arc<CertifiedKey> {
        self.current.served.clone()
    }

    /// When the serving certificate should be replaced.
    pub fn rotate_at(&self) -> SystemTime {
        self.current.rotate_at
    }

    /// 1 for the first certificate, +1 per rotation.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The current CA's common name, for logs.
    pub fn ca_name(&self) -> &str {
        &self.current.ca_name
    }
}

/// Most CA certificates kept in a merged bundle.
pub const MAX_BUNDLE_CAS: usize = 16;

/// The `CERTIFICATE` PEM blocks of a bundle, each with its END line.
fn pem_blocks(bundle: &str) -> Vec<String> {
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    let mut out = Vec::new();
    let mut rest = bundle;
    while let Some(start) = rest.find(BEGIN) {
        let Some(len) = rest[start..].find(END) else {
            break;
        };
        let stop = start + len + END.len();
        out.push(format!("{}\n", &rest[start..stop]));
        rest = &rest[stop..];
    }
    out
}

/// A PEM certificate's DER and notAfter (`None` when it does not parse).
fn parse_pem_cert(pem: &str) -> Option<(Vec<u8>, SystemTime)> {
    let der = CertificateDer::from_pem_slice(pem.as_bytes()).ok()?;
    let (_, cert) = x509_parser::parse_x509_certificate(&der).ok()?;
    let secs = u64::try_from(cert.validity().not_after.timestamp()).ok()?;
    let not_after = SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(secs))?;
    Some((der.to_vec(), not_after))
}

/// The caBundle to publish when several agents (replicas) each have their
/// own CA: every unexpired CA already published plus this agent's own,
/// deduplicated, ordered deterministically (latest expiry first) so that
/// replicas computing it agree and do not rewrite each other's result, and
/// bounded by [`MAX_BUNDLE_CAS`] (this agent's own are always kept).
pub fn merge_bundle(live: Option<&str>, own: &[String], now: SystemTime) -> String {
    let own_parsed: Vec<(Vec<u8>, SystemTime, String)> = own
        .iter()
        .filter_map(|p| parse_pem_cert(p).map(|(der, na)| (der, na, p.clone())))
        .collect();
    let mut all: Vec<(Vec<u8>, SystemTime, String)> = own_parsed.clone();
    for block in live.map(pem_blocks).unwrap_or_default() {
        if let Some((der, not_after)) = parse_pem_cert(&block)
            && not_after > now
            && !all.iter().any(|(d, ..)| *d == der)
        {
            all.push((der, not_after, block));
        }
    }
    all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let is_own = |der: &Vec<u8>| own_parsed.iter().any(|(d, ..)| d == der);
    let mut kept: Vec<&(Vec<u8>, SystemTime, String)> =
        all.iter().filter(|c| is_own(&c.0)).collect();
    for c in all.iter().filter(|c| !is_own(&c.0)) {
        if kept.len() >= MAX_BUNDLE_CAS {
            break;
        }
        kept.push(c);
    }
    kept.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    kept.iter().map(|c| c.2.as_str()).collect()
}

/// Loads a PEM certificate chain and PEM private key from files (as written
/// by cert-manager into a `kubernetes.io/tls` Secret: `tls.crt`, `tls.key`).
/// Returns the key and the raw bytes read (to notice later changes).
pub fn load_pem_files(cert: &Path, key: &Path) -> Result<(Arc<CertifiedKey>, Vec<u8>), CertError> {
    let read = |p: &Path| {
        std::fs::read(p).map_err(|e| CertError::File {
            path: p.display().to_string(),
            detail: e.to_string(),
        })
    };
    let cert_bytes = read(cert)?;
    let key_bytes = read(key)?;
    let chain = CertificateDer::pem_slice_iter(&cert_bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CertError::File {
            path: cert.display().to_string(),
            detail: format!("not a PEM certificate chain: {e}"),
        })?;
    if chain.is_empty() {
        return Err(CertError::File {
            path: cert.display().to_string(),
            detail: "no CERTIFICATE block found".into(),
        });
    }
    let private = PrivateKeyDer::from_pem_slice(&key_bytes).map_err(|e| CertError::File {
        path: key.display().to_string(),
        detail: format!("not a PEM private key: {e}"),
    })?;
    let ck = CertifiedKey::from_der(chain, private, &provider())?;
    let mut seen = cert_bytes;
    seen.extend_from_slice(&key_bytes);
    Ok((Arc::new(ck), seen))
}

/// Hands the current certificate to every TLS handshake; [`Self::set`]
/// swaps it for the next handshake.
#[derive(Debug)]
pub struct SwappableResolver {
    current: RwLock<Arc<CertifiedKey>>,
    /// Set to the served leaf's notAfter (Unix seconds) on every swap.
    expiry: std::sync::OnceLock<prometheus_client::metrics::gauge::Gauge>,
}

/// The leaf certificate's notAfter in Unix seconds.
fn leaf_not_after(key: &CertifiedKey) -> Option<i64> {
    let leaf = key.cert.first()?;
    let (_, cert) = x509_parser::parse_x509_certificate(leaf).ok()?;
    Some(cert.validity().not_after.timestamp())
}

impl SwappableResolver {
    /// A resolver serving `key`.
    pub fn new(key: Arc<CertifiedKey>) -> Self {
        Self {
            current: RwLock::new(key),
            expiry: std::sync::OnceLock::new(),
        }
    }

    /// Keeps `gauge` at the served certificate's expiry (Unix seconds),
    /// now and after every swap.
    pub fn report_expiry(&self, gauge: prometheus_client::metrics::gauge::Gauge) {
        if let Some(t) = leaf_not_after(&self.get()) {
            gauge.set(t);
        }
        let _ = self.expiry.set(gauge);
    }

    /// Serve `key` from the next handshake on.
    pub fn set(&self, key: Arc<CertifiedKey>) {
        if let (Some(gauge), Some(t)) = (self.expiry.get(), leaf_not_after(&key)) {
            gauge.set(t);
        }
        *berth_shared::sync::write(&self.current) = key;
    }

    /// The certificate served now.
    pub fn get(&self) -> Arc<CertifiedKey> {
        berth_shared::sync::read(&self.current).clone()
    }
}

impl ResolvesServerCert for SwappableResolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.get())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(validity: Duration) -> SelfSignedOptions {
        SelfSignedOptions {
            names: vec!["127.0.0.1".into(), "berth-agent.berth-system.svc".into()],
            validity,
        }
    }

    #[test]
    fn generates_and_rotates_with_a_cross_signed_chain() {
        let mut ca = SelfSignedCa::new(opts(Duration::from_secs(3600))).expect("ca");
        assert_eq!(ca.generation(), 1);
        assert_eq!(ca.certified_key().cert.len(), 1, "first chain is the leaf");
        let first_bundle = ca.ca_bundle();
        assert_eq!(first_bundle.matches("BEGIN CERTIFICATE").count(), 1);
        let rotate_at = ca.rotate_at();
        let in_40m = SystemTime::now() + Duration::from_secs(40 * 60);
        assert!(rotate_at <= in_40m + Duration::from_secs(1));
        assert!(rotate_at >= in_40m - Duration::from_secs(5));

        let first_leaf = ca.certified_key().cert[0].clone();
        ca.rotate().expect("rotate");
        assert_eq!(ca.generation(), 2);
        let chain = &ca.certified_key().cert;
        assert_eq!(chain.len(), 2, "leaf + cross-signed CA");
        assert_ne!(chain[0], first_leaf);
        let bundle = ca.ca_bundle();
        assert_eq!(bundle.matches("BEGIN CERTIFICATE").count(), 2);
        assert!(bundle.ends_with(&first_bundle), "old CA kept after the new");
    }

    /// The rotated chain verifies against the old CA alone (an API server
    /// that has not seen the new caBundle yet) and against the new CA alone.
    #[test]
    fn rotated_chain_verifies_against_old_and_new_bundles() {
        use tokio_rustls::rustls::RootCertStore;
        use tokio_rustls::rustls::client::WebPkiServerVerifier;
        use tokio_rustls::rustls::client::danger::ServerCertVerifier as _;
        use tokio_rustls::rustls::pki_types::{ServerName, UnixTime};

        let mut ca = SelfSignedCa::new(opts(Duration::from_secs(3600))).expect("ca");
        let old_bundle = ca.ca_bundle();
        ca.rotate().expect("rotate");
        let new_only = ca.current.ca_pem.clone();
        let chain = ca.certified_key().cert.clone();
        for (what, bundle) in [("old CA", &old_bundle), ("new CA", &new_only)] {
            let mut roots = RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(bundle.as_bytes()) {
                roots.add(cert.expect("pem")).expect("add root");
            }
            let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
                .build()
                .expect("verifier");
            for name in ["127.0.0.1", "berth-agent.berth-system.svc"] {
                let server = ServerName::try_from(name).expect("name");
                verifier
                    .verify_server_cert(&chain[0], &chain[1..], &server, &[], UnixTime::now())
                    .unwrap_or_else(|e| panic!("{what}, {name}: {e}"));
            }
        }
        // A third generation still verifies against the second CA.
        let second = ca.current.ca_pem.clone();
        ca.rotate().expect("rotate again");
        let chain = ca.certified_key().cert.clone();
        let mut roots = RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(second.as_bytes()).expect("pem"))
            .expect("add");
        let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
            .build()
            .expect("verifier");
        let server = ServerName::try_from("127.0.0.1").expect("name");
        verifier
            .verify_server_cert(&chain[0], &chain[1..], &server, &[], UnixTime::now())
            .expect("second CA");
    }

    #[test]
    fn bundles_of_several_replicas_merge() {
        let a = SelfSignedCa::new(opts(Duration::from_secs(3600))).expect("a");
        let b = SelfSignedCa::new(opts(Duration::from_secs(7200))).expect("b");
        let now = SystemTime::now();
        // First replica: nothing published yet.
        let first = merge_bundle(None, &a.own_cas(), now);
        assert_eq!(first, a.ca_bundle());
        // Second replica keeps the first's CA.
        let both = merge_bundle(Some(&first), &b.own_cas(), now);
        assert_eq!(both.matches("BEGIN CERTIFICATE").count(), 2);
        // Deterministic: the first replica computes the same bundle.
        assert_eq!(merge_bundle(Some(&both), &a.own_cas(), now), both);
        assert_eq!(merge_bundle(Some(&both), &b.own_cas(), now), both);
        // Expired CAs of gone replicas are dropped, garbage is ignored.
        let later = now + Duration::from_secs(3 * 3600);
        let pruned = merge_bundle(Some(&format!("junk\n{both}")), &b.own_cas(), later);
        assert_eq!(pruned, b.ca_bundle());
        // Bounded, own CA always kept.
        let many: String = (0..MAX_BUNDLE_CAS + 3)
            .map(|_| {
                SelfSignedCa::new(opts(Duration::from_secs(86400)))
                    .expect("ca")
                    .ca_bundle()
            })
            .collect();
        let bounded = merge_bundle(Some(&many), &a.own_cas(), now);
        assert_eq!(bounded.matches("BEGIN CERTIFICATE").count(), MAX_BUNDLE_CAS);
        assert!(bounded.contains(&a.ca_bundle()));
    }

    #[test]
    fn rejects_silly_validity() {
        assert!(matches!(
            SelfSignedCa::new(opts(Duration::from_secs(1))),
            Err(CertError::Validity(_))
        ));
    }

    #[test]
    fn resolver_swaps() {
        let a = SelfSignedCa::new(opts(Duration::from_secs(60))).expect("a");
        let b = SelfSignedCa::new(opts(Duration::from_secs(60))).expect("b");
        let r = SwappableResolver::new(a.certified_key());
        assert!(Arc::ptr_eq(&r.get(), &a.certified_key()));
        r.set(b.certified_key());
        assert!(Arc::ptr_eq(&r.get(), &b.certified_key()));
    }

    #[test]
    fn loads_pem_files() {
        let dir = std::env::current_exe()
            .expect("exe")
            .parent()
            .expect("deps")
            .join(format!("berth-admission-certs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let key = KeyPair::generate().expect("key");
        let cert = CertificateParams::new(vec!["localhost".to_string()])
            .expect("params")
            .self_signed(&key)
            .expect("cert");
        std::fs::write(dir.join("tls.crt"), cert.pem()).expect("write");
        std::fs::write(dir.join("tls.key"), key.serialize_pem()).expect("write");
        let (ck, seen) = load_pem_files(&dir.join("tls.crt"), &dir.join("tls.key")).expect("loads");
        assert_eq!(ck.cert.len(), 1);
        assert!(!seen.is_empty());
        std::fs::write(dir.join("tls.key"), "garbage").expect("write");
        let err = load_pem_files(&dir.join("tls.crt"), &dir.join("tls.key")).expect_err("bad key");
        assert!(err.to_string().contains("tls.key"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
