{{/*
Names. With the release name "berth" (as in the README) every name is the
kustomize base's: berth-agent, berth-agent-admission, berth-admission,
berth-runtimegrant-writers. Another release name gives other names, so two
releases (for example one per watched namespace) share no cluster-scoped
object.
*/}}
{{- define "berth.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else if contains "berth" .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-berth" .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "berth.agent" -}}{{ include "berth.fullname" . }}-agent{{- end -}}
{{- define "berth.admissionParams" -}}{{ include "berth.fullname" . }}-admission{{- end -}}
{{- define "berth.policy" -}}{{ include "berth.fullname" . }}-runtimegrant-writers{{- end -}}

{{/* The agent's identity as the API server sees it. */}}
{{- define "berth.agentUser" -}}system:serviceaccount:{{ .Release.Namespace }}:{{ include "berth.agent" . }}{{- end -}}

{{/* The image reference: a digest pins it (tag kept for readers), else the tag. */}}
{{- define "berth.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}:{{ $tag }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ $tag }}
{{- end -}}
{{- end -}}

{{/*
labels: and annotations: of an object's metadata. Call with
(dict "root" $ "labels" (dict ...) ["annotations" (dict ...)]): the object's own labels and
annotations win over .Values.labels and .Values.annotations (selectors and
app.kubernetes.io/* stay as shipped). Prints nothing when both are empty.
*/}}
{{- define "berth.meta" -}}
{{- $labels := merge (deepCopy (.labels | default dict)) (deepCopy (.root.Values.labels | default dict)) -}}
{{- with $labels }}
labels:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- $annotations := merge (deepCopy (.annotations | default dict)) (deepCopy (.root.Values.annotations | default dict)) -}}
{{- with $annotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{- define "berth.webhookMode" -}}{{ .Values.webhook.certificateMode }}{{- end -}}

{{/* The Secret holding the webhook's serving certificate (cert-manager / files modes). */}}
{{- define "berth.tlsSecret" -}}
{{- if eq .Values.webhook.certificateMode "cert-manager" -}}
{{ include "berth.agent" . }}-webhook-tls
{{- else -}}
{{ required "webhook.files.secretName is required when webhook.certificateMode is files" .Values.webhook.files.secretName }}
{{- end -}}
{{- end -}}

{{/*
Whole seconds of a duration value ("60s"), for the agent's --*-seconds
flags. Call with (list VALUE "its.name"); the schema admits only "<n>s".
*/}}
{{- define "berth.seconds" -}}
{{- $v := index . 0 | toString -}}
{{- if not (regexMatch "^[1-9][0-9]*s$" $v) -}}
{{- fail (printf "%s: %q is not a whole number of seconds such as \"60s\"" (index . 1) $v) -}}
{{- end -}}
{{- trimSuffix "s" $v -}}
{{- end -}}
