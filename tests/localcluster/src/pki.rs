//! The cluster's certificates and keys: one CA, the apiserver's serving
//! certificate, an admin client certificate (group system:masters), a
//! restricted user's client certificate for RBAC tests, the apiserver's
//! client certificate for the kubelets, and the
//! ServiceAccount token signing key.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose, SanType,
};

use super::Error;

/// The user of the apiserver's client certificate for the kubelets
/// (`apiserver-kubelet-client.crt`), kubeadm's name for it.
pub const KUBELET_CLIENT_USER: &str = "kube-apiserver-kubelet-client";

/// The `kubernetes` Service's ClusterIP: the first address of the Service
/// range (`--service-cluster-ip-range=10.96.0.0/16`). The apiserver's
/// certificate names it; pods on a real node dial it
/// (`realnode::service_proxy`).
pub const KUBERNETES_SERVICE_IP: std::net::Ipv4Addr = std::net::Ipv4Addr::new(10, 96, 0, 1);

/// A PEM certificate and its PEM private key.
#[derive(Debug, Clone)]
pub struct CertAndKey {
    pub cert_pem: String,
    pub key_pem: String,
}

/// Everything the control plane and its clients need, written under `DIR/pki`.
#[derive(Debug)]
pub struct Pki {
    pub dir: PathBuf,
    pub ca: CertAndKey,
    pub admin: CertAndKey,
}

fn rc(e: rcgen::Error) -> Error {
    Error::Pki(e.to_string())
}

fn write(dir: &Path, name: &str, content: &str) -> Result<(), Error> {
    let path = dir.join(name);
    std::fs::write(&path, content).map_err(|e| Error::io(&path, e))
}

/// Issues a client certificate for `user` in `groups`, signed by the CA.
fn client_cert(
    ca: &CertifiedIssuer<'_, KeyPair>,
    user: &str,
    groups: &[&str],
) -> Result<CertAndKey, Error> {
    let key = KeyPair::generate().map_err(rc)?;
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(rc)?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, user);
    for g in groups {
        dn.push(DnType::OrganizationName, *g);
    }
    params.distinguished_name = dn;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, ca).map_err(rc)?;
    Ok(CertAndKey {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// The CA's parameters: the same each time, so that [`Pki::node_certs`]
/// can sign with the saved key later.
fn ca_params() -> Result<CertificateParams, Error> {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(rc)?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "berth-localcluster-ca");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    Ok(ca_params)
}

impl Pki {
    /// Creates a fresh CA and every certificate under `dir`.
    pub fn create(dir: &Path) -> Result<Self, Error> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;

        let ca_key = KeyPair::generate().map_err(rc)?;
        let ca_params = ca_params()?;
        let ca_key_pem = ca_key.serialize_pem();
        let ca = CertifiedIssuer::self_signed(ca_params, ca_key).map_err(rc)?;
        let ca_pair = CertAndKey {
            cert_pem: ca.pem(),
            key_pem: ca_key_pem,
        };

        // Serving certificate for the apiserver (and reused by the other
        // components' secure ports, which clients reach on loopback only).
        let serving_key = KeyPair::generate().map_err(rc)?;
        let mut serving = CertificateParams::new(vec![
            "localhost".to_string(),
            "kubernetes".to_string(),
            "kubernetes.default".to_string(),
            "kubernetes.default.svc".to_string(),
            "kubernetes.default.svc.cluster.local".to_string(),
        ])
        .map_err(rc)?;
        serving
            .subject_alt_names
            .push(SanType::IpAddress(std::net::IpAddr::V4(
                std::net::Ipv4Addr::LOCALHOST,
            )));
        // The `kubernetes` Service's ClusterIP, as in a real cluster's
        // certificate: what a pod on a real node dials (in-cluster config,
        // `KUBERNETES_SERVICE_HOST`; see `realnode::service_proxy`).
        serving
            .subject_alt_names
            .push(SanType::IpAddress(std::net::IpAddr::V4(
                KUBERNETES_SERVICE_IP,
            )));
        serving
            .distinguished_name
            .push(DnType::CommonName, "kube-apiserver");
        serving.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let serving_cert = serving.signed_by(&serving_key, &ca).map_err(rc)?;

        let admin = client_cert(&ca, "berth-admin", &["system:masters"])?;
        // The apiserver's identity toward the kubelets (`kubectl logs`,
        // `exec`, the node proxy): in no group, its rights on the kubelet
        // API are an RBAC binding (`realnode::start::bind_kubelet_api`), as
        // in a real cluster.
        let kubelet_client = client_cert(&ca, KUBELET_CLIENT_USER, &[])?;
        // A second identity with no rights of its own; tests grant it RBAC.
        let restricted = client_cert(&ca, "berth-restricted", &["berth:restricted"])?;

        let sa_key = KeyPair::generate().map_err(rc)?;

        write(dir, "ca.crt", &ca_pair.cert_pem)?;
        write(dir, "ca.key", &ca_pair.key_pem)?;
        write(dir, "apiserver.crt", &serving_cert.pem())?;
        write(dir, "apiserver.key", &serving_key.serialize_pem())?;
        write(dir, "admin.crt", &admin.cert_pem)?;
        write(dir, "admin.key", &admin.key_pem)?;
        write(dir, "restricted.crt", &restricted.cert_pem)?;
        write(
            dir,
            "apiserver-kubelet-client.crt",
            &kubelet_client.cert_pem,
        )?;
        write(dir, "apiserver-kubelet-client.key", &kubelet_client.key_pem)?;
        write(dir, "restricted.key", &restricted.key_pem)?;
        write(dir, "sa.key", &sa_key.serialize_pem())?;
        write(dir, "sa.pub", &sa_key.public_key_pem())?;

        Ok(Self {
            dir: dir.to_path_buf(),
            ca: ca_pair,
            admin,
        })
    }

    /// A real node's certificates, written as `node-NAME.crt/key` (its
    /// client identity `system:node:NAME` in `system:nodes`, for the Node
    /// authorizer) and `kubelet-NAME.crt/key` (the kubelet's serving
    /// certificate for `ip`).
    pub fn node_certs(&self, name: &str, ip: std::net::Ipv4Addr) -> Result<(), Error> {
        let key = KeyPair::from_pem(&self.ca.key_pem).map_err(rc)?;
        let ca = rcgen::Issuer::new(ca_params()?, key);
        let client = {
            let key = KeyPair::generate().map_err(rc)?;
            let mut params = CertificateParams::new(Vec::<String>::new()).map_err(rc)?;
            params
                .distinguished_name
                .push(DnType::CommonName, format!("system:node:{name}"));
            params
                .distinguished_name
                .push(DnType::OrganizationName, "system:nodes");
            params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
            let cert = params.signed_by(&key, &ca).map_err(rc)?;
            (cert.pem(), key.serialize_pem())
        };
        let serving = {
            let key = KeyPair::generate().map_err(rc)?;
            let mut params = CertificateParams::new(vec![name.to_string()]).map_err(rc)?;
            params
                .subject_alt_names
                .push(SanType::IpAddress(std::net::IpAddr::V4(ip)));
            params.distinguished_name.push(DnType::CommonName, name);
            params.key_usages = vec![
                KeyUsagePurpose::DigitalSignature,
                KeyUsagePurpose::KeyEncipherment,
            ];
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
            let cert = params.signed_by(&key, &ca).map_err(rc)?;
            (cert.pem(), key.serialize_pem())
        };
        write(&self.dir, &format!("node-{name}.crt"), &client.0)?;
        write(&self.dir, &format!("node-{name}.key"), &client.1)?;
        write(&self.dir, &format!("kubelet-{name}.crt"), &serving.0)?;
        write(&self.dir, &format!("kubelet-{name}.key"), &serving.1)
    }

    /// Path of a file in the PKI directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}
