//! Kubeconfigs that reach several clusters at once, for tests of berth's
//! multi-context commands.

use std::path::Path;

/// Writes to `out` one kubeconfig holding each member's current context
/// under the name given with it (its cluster and user renamed alike), so
/// that one file reaches several clusters (`berth --context a,b`). A
/// kubeconfig may be named twice, as two contexts of one cluster.
pub fn merge_kubeconfigs(out: &Path, members: &[(&str, &Path)]) -> Result<(), String> {
    use kube::config::Kubeconfig;
    let mut merged = Kubeconfig::default();
    for (name, path) in members {
        let kc = Kubeconfig::read_from(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let current = kc.current_context.clone().ok_or("no current context")?;
        let mut context = kc
            .contexts
            .iter()
            .find(|c| c.name == current)
            .cloned()
            .ok_or("no such context")?;
        let inner = context.context.as_mut().ok_or("an empty context")?;
        let mut cluster = kc
            .clusters
            .iter()
            .find(|c| c.name == inner.cluster)
            .cloned()
            .ok_or("no such cluster")?;
        let user = inner.user.clone().unwrap_or_default();
        let mut auth = kc
            .auth_infos
            .iter()
            .find(|a| a.name == user)
            .cloned()
            .ok_or("no such user")?;
        context.name = (*name).to_string();
        cluster.name = (*name).to_string();
        auth.name = (*name).to_string();
        inner.cluster = (*name).to_string();
        inner.user = Some((*name).to_string());
        merged.clusters.push(cluster);
        merged.auth_infos.push(auth);
        merged.contexts.push(context);
    }
    merged.current_context = members.first().map(|(n, _)| (*n).to_string());
    let text = yaml_serde::to_string(&merged).map_err(|e| e.to_string())?;
    std::fs::write(out, text).map_err(|e| format!("{}: {e}", out.display()))
}
