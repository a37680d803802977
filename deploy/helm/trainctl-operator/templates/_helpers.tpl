{{/* The name of every object of the release. */}}
{{- define "trainctl-operator.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels that select the operator's pods. */}}
{{- define "trainctl-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Labels of every object. */}}
{{- define "trainctl-operator.labels" -}}
{{ include "trainctl-operator.selectorLabels" . }}
app.kubernetes.io/part-of: trainctl
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/*
The plurals of the enabled kinds, one per line (tfjobs, ...). enabledSchemes takes the CLI's
spellings (TFJob, tfjob, tfjobs); empty means all seven. An unknown kind fails the render.
*/}}
{{- define "trainctl-operator.plurals" -}}
{{- $all := list "tfjob" "pytorchjob" "xgboostjob" "paddlejob" "jaxjob" "mpijob" "mxjob" -}}
{{- $kinds := .Values.enabledSchemes | default $all -}}
{{- range $kinds }}
{{- $kind := . | lower | trimSuffix "s" }}
{{- if not (has $kind $all) }}
{{- fail (printf "enabledSchemes: %q is not one of tfjob, pytorchjob, xgboostjob, paddlejob, jaxjob, mpijob, mxjob" .) }}
{{- end }}
{{ printf "%ss" $kind }}
{{- end }}
{{- end -}}

{{/* The API group of the PodGroups of gangSchedulerName. */}}
{{- define "trainctl-operator.podGroupApiGroup" -}}
{{- if eq .Values.gangSchedulerName "volcano" -}}
scheduling.volcano.sh
{{- else -}}
scheduling.x-k8s.io
{{- end -}}
{{- end -}}
