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

{{/* The effective driver config file, as the reference chart builds it: driverConfig with the
deprecated args.cpuDeviceMode, args.groupBy, args.reservedCPUs and args.hostnameOverride laid over
it when set (they win), then ours, sharedPoolUpdates. Empty when there is nothing to configure
(then no ConfigMap and no --config). */}}
{{- define "dracpu.config" -}}
{{- $cfg := deepCopy .Values.driverConfig }}
{{- if .Values.args.cpuDeviceMode }}
{{- $_ := set $cfg "cpuDeviceMode" .Values.args.cpuDeviceMode }}
{{- end }}
{{- if .Values.args.groupBy }}
{{- $_ := set $cfg "groupBy" .Values.args.groupBy }}
{{- end }}
{{- if .Values.args.reservedCPUs }}
{{- $_ := set $cfg "reservedCPUs" .Values.args.reservedCPUs }}
{{- end }}
{{- if .Values.args.hostnameOverride }}
{{- $_ := set $cfg "hostnameOverride" .Values.args.hostnameOverride }}
{{- end }}
{{- if .Values.sharedPoolUpdates }}
{{- $_ := set $cfg "sharedPoolUpdates" .Values.sharedPoolUpdates }}
{{- end }}
{{- if $cfg }}
{{- toYaml $cfg }}
{{- end }}
{{- end }}
