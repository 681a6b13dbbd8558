package docker

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// APIVersion is the Docker Engine API version reef speaks: 1.41 (Docker 20.10), which
// every engine since 2020 accepts.
const APIVersion = "v1.41"

// Client is a small Docker Engine API client over the engine's unix socket: the dozen
// endpoints reef needs (images import and inspect, containers create, start, inspect,
// list, logs and remove). reef does not use the moby client module: its dependency tree
// (otel, containerd, go-winio …) is larger than all of reef, and its Options/Result API
// is still moving between releases, while these endpoints have been stable for years.
type Client struct {
	hc   *http.Client
	base string
	sock string // the engine's socket path (exec hijacks a connection of its own)
}

// NewClient connects to $DOCKER_HOST (unix:// only) or /var/run/docker.sock.
func NewClient() (*Client, error) {
	addr := os.Getenv("DOCKER_HOST")
	if addr == "" {
		addr = "unix:///var/run/docker.sock"
	}
	return NewClientAt(addr)
}

// Error is an error answer of the engine.
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("docker engine: %s (HTTP %d)", e.Message, e.Status)
}

// IsNotFound reports whether err is the engine's 404.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// do sends a request and decodes a JSON answer into out (when non-nil).
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body io.Reader, ctype string, out any) error {
	resp, err := c.send(ctx, method, path, q, body, ctype)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("docker: %s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// send sends a request and returns the response of a 2xx answer (caller closes Body).
func (c *Client) send(ctx context.Context, method, path string, q url.Values, body io.Reader, ctype string) (*http.Response, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("docker: %s %s: %w (is the Docker engine running?)", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var m struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(b, &m) != nil || m.Message == "" {
			m.Message = strings.TrimSpace(string(b))
		}
		return nil, &Error{Status: resp.StatusCode, Message: m.Message}
	}
	return resp, nil
}

func jsonBody(v any) (io.Reader, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	return bytes.NewReader(b), nil
}

// Ping checks that the engine answers.
func (c *Client) Ping(ctx context.Context) error {
	resp, err := c.send(ctx, http.MethodGet, "/_ping", nil, nil, "")
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// ContainerConfig is the subset of the engine's create body reef sets.
type ContainerConfig struct {
	Image      string            `json:"Image"`
	Entrypoint []string          `json:"Entrypoint,omitempty"`
	Cmd        []string          `json:"Cmd,omitempty"`
	Labels     map[string]string `json:"Labels,omitempty"`
	Hostname   string            `json:"Hostname,omitempty"`
	WorkingDir string            `json:"WorkingDir,omitempty"`
	HostConfig HostConfig        `json:"HostConfig"`
}

// HostConfig is the subset of the engine's HostConfig reef sets.
type HostConfig struct {
	NetworkMode   string            `json:"NetworkMode,omitempty"`
	Binds         []string          `json:"Binds,omitempty"`
	CapAdd        []string          `json:"CapAdd,omitempty"`
	Sysctls       map[string]string `json:"Sysctls,omitempty"`
	ExtraHosts    []string          `json:"ExtraHosts,omitempty"`
	AutoRemove    bool              `json:"AutoRemove,omitempty"`
	Privileged    bool              `json:"Privileged,omitempty"`
	RestartPolicy struct {
		Name string `json:"Name"`
	} `json:"RestartPolicy"`
	Ulimits []Ulimit `json:"Ulimits,omitempty"`
	// CpusetCpus are the CPUs the container's processes may run on ("0-1,3").
	CpusetCpus string `json:"CpusetCpus,omitempty"`
}

// Ulimit is one resource limit of a container.
type Ulimit struct {
	Name string `json:"Name"`
	Soft int64  `json:"Soft"`
	Hard int64  `json:"Hard"`
}

// Create creates container name and returns its id.
func (c *Client) Create(ctx context.Context, name string, cfg *ContainerConfig) (string, error) {
	body, err := jsonBody(cfg)
	if err != nil {
		return "", err
	}
	var out struct {
		ID string `json:"Id"`
	}
	if err := c.do(ctx, http.MethodPost, "/containers/create", url.Values{"name": {name}}, body, "application/json", &out); err != nil {
		return "", fmt.Errorf("docker: create %s: %w", name, err)
	}
	return out.ID, nil
}

// Start starts a created container.
func (c *Client) Start(ctx context.Context, id string) error {
	if err := c.do(ctx, http.MethodPost, "/containers/"+id+"/start", nil, nil, "", nil); err != nil {
		return fmt.Errorf("docker: start %s: %w", id, err)
	}
	return nil
}

// ContainerState is what Inspect reports about a container.
type ContainerState struct {
	ID    string `json:"Id"`
	Name  string `json:"Name"`
	Image string `json:"Image"`
	State struct {
		Status   string `json:"Status"`
		Running  bool   `json:"Running"`
		Pid      int    `json:"Pid"`
		ExitCode int    `json:"ExitCode"`
		Error    string `json:"Error"`
	} `json:"State"`
	Config struct {
		Labels map[string]string `json:"Labels"`
	} `json:"Config"`
}

// Inspect returns a container's state.
func (c *Client) Inspect(ctx context.Context, id string) (*ContainerState, error) {
	var st ContainerState
	if err := c.do(ctx, http.MethodGet, "/containers/"+id+"/json", nil, nil, "", &st); err != nil {
		return nil, fmt.Errorf("docker: inspect %s: %w", id, err)
	}
	return &st, nil
}

// ContainerSummary is one entry of List.
type ContainerSummary struct {
	ID     string            `json:"Id"`
	Names  []string          `json:"Names"`
	State  string            `json:"State"`
	Labels map[string]string `json:"Labels"`
}

// List returns every container (running or not) carrying all of labels ("k=v" or "k").
func (c *Client) List(ctx context.Context, labels ...string) ([]ContainerSummary, error) {
	f, _ := json.Marshal(map[string][]string{"label": labels})
	var out []ContainerSummary
	if err := c.do(ctx, http.MethodGet, "/containers/json", url.Values{"all": {"1"}, "filters": {string(f)}}, nil, "", &out); err != nil {
		return nil, fmt.Errorf("docker: list containers: %w", err)
	}
	return out, nil
}

// Remove force-removes a container and its anonymous volumes; a missing one is fine.
func (c *Client) Remove(ctx context.Context, id string) error {
	err := c.do(ctx, http.MethodDelete, "/containers/"+id, url.Values{"force": {"1"}, "v": {"1"}}, nil, "", nil)
	if err != nil && !IsNotFound(err) {
		return fmt.Errorf("docker: remove %s: %w", id, err)
	}
	return nil
}

// Logs returns a stopped or running container's stdout and stderr, interleaved.
func (c *Client) Logs(ctx context.Context, id string) ([]byte, error) {
	resp, err := c.send(ctx, http.MethodGet, "/containers/"+id+"/logs", url.Values{"stdout": {"1"}, "stderr": {"1"}}, nil, "")
	if err != nil {
		return nil, fmt.Errorf("docker: logs %s: %w", id, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("docker: logs %s: %w", id, err)
	}
	return demux(raw), nil
}

// demux strips the engine's stream framing (8-byte headers: stream, 0, 0, 0, size) from
// a non-TTY log stream.
func demux(raw []byte) []byte {
	var out []byte
	for len(raw) >= 8 && raw[1] == 0 && raw[2] == 0 && raw[3] == 0 && raw[0] <= 2 {
		n := int(binary.BigEndian.Uint32(raw[4:8]))
		raw = raw[8:]
		if n > len(raw) {
			n = len(raw)
		}
		out = append(out, raw[:n]...)
		raw = raw[n:]
	}
	return append(out, raw...)
}

// ImageExists reports whether the engine has image ref.
func (c *Client) ImageExists(ctx context.Context, ref string) (bool, error) {
	err := c.do(ctx, http.MethodGet, "/images/"+ref+"/json", nil, nil, "", nil)
	if IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// ImportImage creates image repo:tag from rootfs, a tar of the image's filesystem, with
// Dockerfile-style changes (`ENTRYPOINT ["/switchd"]`): `docker import`, no registry.
func (c *Client) ImportImage(ctx context.Context, rootfs io.Reader, ref string, changes []string) error {
	repo, tag, ok := strings.Cut(ref, ":")
	if !ok {
		tag = "latest"
	}
	q := url.Values{"fromSrc": {"-"}, "repo": {repo}, "tag": {tag}}
	for _, ch := range changes {
		q.Add("changes", ch)
	}
	resp, err := c.send(ctx, http.MethodPost, "/images/create", q, rootfs, "application/x-tar")
	if err != nil {
		return fmt.Errorf("docker: import %s: %w", ref, err)
	}
	defer resp.Body.Close()
	// Errors arrive inside the JSON message stream, not as the HTTP status.
	dec := json.NewDecoder(resp.Body)
	for {
		var m struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("docker: import %s: %w", ref, err)
		}
		if m.Error != "" {
			return fmt.Errorf("docker: import %s: %s", ref, m.Error)
		}
	}
}

// waitRunning polls until container id runs and returns its PID.
func (c *Client) waitRunning(ctx context.Context, id string) (int, error) {
	for i := 0; ; i++ {
		st, err := c.Inspect(ctx, id)
		if err != nil {
			return 0, err
		}
		if st.State.Running && st.State.Pid > 0 {
			return st.State.Pid, nil
		}
		if st.State.Status == "exited" || st.State.Status == "dead" || i > 200 {
			logs, _ := c.Logs(ctx, id)
			return 0, fmt.Errorf("docker: container %s is %s (exit %d %s); its log says:\n%s", strings.TrimPrefix(st.Name, "/"),
				st.State.Status, st.State.ExitCode, st.State.Error, tailBytes(logs))
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func tailBytes(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
