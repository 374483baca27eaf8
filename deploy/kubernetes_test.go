// Package deploy holds the example deployment manifests; its test checks
// them against the Kubernetes API's own types.
package deploy

import (
	"os"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

// TestKubernetesManifest checks kubernetes.yaml: each document is a valid
// object of its kind (strictly: an unknown or misspelt field fails), the
// Service and the disruption budget select the Deployment's pods, the
// probes name the server's health routes on declared ports, and every
// environment variable the manifest sets is one the README documents.
func TestKubernetesManifest(t *testing.T) {
	raw, err := os.ReadFile("kubernetes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var (
		deployment *appsv1.Deployment
		service    *corev1.Service
		budget     *policyv1.PodDisruptionBudget
		secret     *corev1.Secret
	)
	for i, doc := range strings.Split(string(raw), "\n---\n") {
		var head struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("document %d: %v", i+1, err)
		}
		var obj any
		switch head.APIVersion + " " + head.Kind {
		case "apps/v1 Deployment":
			deployment = new(appsv1.Deployment)
			obj = deployment
		case "v1 Service":
			service = new(corev1.Service)
			obj = service
		case "policy/v1 PodDisruptionBudget":
			budget = new(policyv1.PodDisruptionBudget)
			obj = budget
		case "v1 Secret":
			secret = new(corev1.Secret)
			obj = secret
		default:
			t.Fatalf("document %d: unexpected %s %s", i+1, head.APIVersion, head.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Errorf("document %d (%s): %v", i+1, head.Kind, err)
		}
	}
	if deployment == nil || service == nil || budget == nil || secret == nil {
		t.Fatal("want a Deployment, a Service, a PodDisruptionBudget and a Secret")
	}

	pods := deployment.Spec.Template.Labels
	matches := func(selector map[string]string) bool {
		for k, v := range selector {
			if pods[k] != v {
				return false
			}
		}
		return len(selector) > 0
	}
	if !matches(deployment.Spec.Selector.MatchLabels) || !matches(service.Spec.Selector) || !matches(budget.Spec.Selector.MatchLabels) {
		t.Error("the Deployment's, the Service's and the budget's selectors must all select the pods")
	}
	c := deployment.Spec.Template.Spec.Containers[0]
	ports := map[string]bool{}
	for _, p := range c.Ports {
		ports[p.Name] = true
	}
	for _, sp := range service.Spec.Ports {
		if !ports[sp.TargetPort.String()] {
			t.Errorf("the Service targets port %q, which the container does not declare", sp.TargetPort.String())
		}
	}
	for probe, want := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz"} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != want || !ports[probe.HTTPGet.Port.String()] {
			t.Errorf("probe %+v: want GET %s on a declared port", probe, want)
		}
	}

	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{"GOMEMLIMIT": true}
	for _, m := range regexp.MustCompile("\\| `([A-Z_]+)` \\|").FindAllStringSubmatch(string(readme), -1) {
		documented[m[1]] = true
	}
	var names []string
	for _, e := range c.Env {
		names = append(names, e.Name)
	}
	for name := range secret.StringData {
		names = append(names, name)
	}
	for _, name := range names {
		if !documented[name] {
			t.Errorf("the manifest sets %s, which the README's configuration table does not document", name)
		}
	}
}
