{{/* The labels every object has, and the pods' selector. */}}
{{- define "nxquota.selector" -}}
app.kubernetes.io/name: nxquota
app.kubernetes.io/component: nxquotad
{{- end -}}
