{{/* The name every object of the release carries. */}}
{{- define "wlmap.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels on every object. */}}
{{- define "wlmap.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The controller's pods. */}}
{{- define "wlmap.selector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end -}}

{{/* The gang objects' API group and version for the scheduler chosen. */}}
{{- define "wlmap.gangResources" -}}
{{- if eq .Values.scheduler "native-composite" -}}[podgroups, compositepodgroups, workloads]
{{- else -}}[podgroups]
{{- end -}}
{{- end -}}

{{/* The webhook configurations' name. With Kueue it sorts before Kueue's own
(kueue-mutating-webhook-configuration): the API server calls mutating webhooks in the order of
their configurations' names, and Kueue's must see the pod group's labels. */}}
{{- define "wlmap.webhookConfig" -}}
{{- if eq .Values.scheduler "kueue" -}}00-{{ include "wlmap.fullname" . }}
{{- else -}}{{ include "wlmap.fullname" . }}
{{- end -}}
{{- end -}}

{{- define "wlmap.gangGroup" -}}
{{- if eq .Values.scheduler "coscheduling" -}}scheduling.x-k8s.io
{{- else if eq .Values.scheduler "volcano" -}}scheduling.volcano.sh
{{- else -}}scheduling.k8s.io
{{- end -}}
{{- end -}}
