{{/* The chart's name. */}}
{{- define "airlock.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The prefix of every object's name: the release name, with the chart's
     name appended unless the release name already contains it. */}}
{{- define "airlock.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "airlock.controlPlane.fullname" -}}
{{- printf "%s-control-plane" (include "airlock.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "airlock.node.fullname" -}}
{{- printf "%s-node" (include "airlock.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The credentials Secret: existingSecret, else the one the chart makes. */}}
{{- define "airlock.secretName" -}}
{{- default (include "airlock.fullname" .) .Values.existingSecret -}}
{{- end -}}

{{- define "airlock.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "airlock.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "airlock.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ default .Chart.AppVersion .Values.image.tag | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component ("control-plane" or "node"); also what
     the NetworkPolicies match on. */}}
{{- define "airlock.selectorLabels" -}}
app.kubernetes.io/name: {{ include "airlock.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Egress to the DNS servers, the Kubernetes API and the internet, shared
     by both NetworkPolicies. */}}
{{- define "airlock.commonEgress" -}}
- to:
    {{- toYaml .Values.networkPolicy.dns | nindent 4 }}
  ports:
    - protocol: UDP
      port: 53
    - protocol: TCP
      port: 53
- ports:
    {{- range .Values.networkPolicy.kubeAPI.ports }}
    - protocol: TCP
      port: {{ . }}
    {{- end }}
  {{- with .Values.networkPolicy.kubeAPI.cidrs }}
  to:
    {{- range . }}
    - ipBlock:
        cidr: {{ . }}
    {{- end }}
  {{- end }}
{{- end -}}

{{- define "airlock.internetEgress" -}}
- to:
    - ipBlock:
        cidr: {{ .Values.networkPolicy.internet.cidr }}
        {{- with .Values.networkPolicy.internet.except }}
        except:
          {{- toYaml . | nindent 10 }}
        {{- end }}
{{- end -}}

{{/*
The egress proxy's flags, the same for the control plane and the nodes
(values egress.dns, egress.allowPrivate); nothing when both are unset.
*/}}
{{- define "airlock.egressArgs" -}}
{{- with .Values.egress.dns }}
- --egress-dns
- {{ . | quote }}
{{- end }}
{{- range .Values.egress.allowPrivate }}
- --egress-allow-private
- {{ . | quote }}
{{- end }}
{{- end }}
