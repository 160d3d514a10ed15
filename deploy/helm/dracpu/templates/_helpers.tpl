{{/* Names and labels. This chart uses only the template subset deploy/render.py implements
(see there); `make test` renders it and compares with deploy/manifests/. */}}
{{- define "dracpu.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "dracpu.fullname" -}}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "dracpu.selectorLabels" -}}
app.kubernetes.io/name: {{ include "dracpu.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "dracpu.labels" -}}
{{ include "dracpu.selectorLabels" . }}
app.kubernetes.io/version: {{ default .Chart.AppVersion .Values.image.tag | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The effective driver config file: driverConfig with sharedPoolUpdates laid over it.
Empty when there is nothing to configure (then no ConfigMap and no --config). */}}
{{- define "dracpu.config" -}}
{{- $cfg := deepCopy .Values.driverConfig }}
{{- if .Values.sharedPoolUpdates }}
{{- $_ := set $cfg "sharedPoolUpdates" .Values.sharedPoolUpdates }}
{{- end }}
{{- if $cfg }}
{{- toYaml $cfg }}
{{- end }}
{{- end }}
