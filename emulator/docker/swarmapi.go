package docker

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// This file is the part of the Engine API a Swarm backend needs (emulator/swarm): the
// manager's nodes, services, tasks and configs, and on each machine's own engine exec
// with attached streams and file copies out of a container.

// NewClientAt connects to the engine at addr ("unix:///path").
func NewClientAt(addr string) (*Client, error) {
	sock, ok := strings.CutPrefix(addr, "unix://")
	if !ok {
		return nil, fmt.Errorf("docker: engine %s: only unix:// sockets are supported", addr)
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		MaxIdleConnsPerHost: 16,
	}
	return &Client{hc: &http.Client{Transport: tr}, base: "http://docker/" + APIVersion, sock: sock}, nil
}

// Node is one Swarm node as the manager reports it.
type Node struct {
	ID   string `json:"ID"`
	Spec struct {
		Labels       map[string]string `json:"Labels"`
		Availability string            `json:"Availability"`
	} `json:"Spec"`
	Description struct {
		Hostname  string `json:"Hostname"`
		Resources struct {
			NanoCPUs    int64 `json:"NanoCPUs"`
			MemoryBytes int64 `json:"MemoryBytes"`
		} `json:"Resources"`
	} `json:"Description"`
	Status struct {
		State string `json:"State"`
		Addr  string `json:"Addr"`
	} `json:"Status"`
}

// Nodes lists the Swarm's nodes (the engine must be a manager).
func (c *Client) Nodes(ctx context.Context) ([]Node, error) {
	var out []Node
	if err := c.do(ctx, http.MethodGet, "/nodes", nil, nil, "", &out); err != nil {
		return nil, fmt.Errorf("docker: swarm nodes: %w", err)
	}
	return out, nil
}

// ServiceSpec is the subset of a Swarm service's spec reef sets.
type ServiceSpec struct {
	Name         string            `json:"Name"`
	Labels       map[string]string `json:"Labels,omitempty"`
	TaskTemplate TaskSpec          `json:"TaskTemplate"`
	Mode         struct {
		Replicated struct {
			Replicas uint64 `json:"Replicas"`
		} `json:"Replicated"`
	} `json:"Mode"`
}

// TaskSpec is the subset of a service's task template reef sets.
type TaskSpec struct {
	ContainerSpec struct {
		Image         string            `json:"Image"`
		Args          []string          `json:"Args,omitempty"`
		Labels        map[string]string `json:"Labels,omitempty"`
		Hostname      string            `json:"Hostname,omitempty"`
		Env           []string          `json:"Env,omitempty"`
		CapabilityAdd []string          `json:"CapabilityAdd,omitempty"`
		Configs       []ConfigRef       `json:"Configs,omitempty"`
		Mounts        []Mount           `json:"Mounts,omitempty"`
		StopGrace     int64             `json:"StopGracePeriod,omitempty"`
	} `json:"ContainerSpec"`
	RestartPolicy struct {
		Condition string `json:"Condition"`
	} `json:"RestartPolicy"`
	Placement struct {
		Constraints []string `json:"Constraints,omitempty"`
	} `json:"Placement"`
	Networks []struct {
		Target string `json:"Target"`
	} `json:"Networks,omitempty"`
	Resources struct {
		Limits struct {
			NanoCPUs    int64 `json:"NanoCPUs,omitempty"`
			MemoryBytes int64 `json:"MemoryBytes,omitempty"`
		} `json:"Limits"`
	} `json:"Resources"`
}

// Mount is a bind mount of a task's container.
type Mount struct {
	Type     string `json:"Type"`
	Source   string `json:"Source"`
	Target   string `json:"Target"`
	ReadOnly bool   `json:"ReadOnly,omitempty"`
}

// ConfigRef mounts a Swarm config as a file in a task's container.
type ConfigRef struct {
	File struct {
		Name string `json:"Name"`
		UID  string `json:"UID"`
		GID  string `json:"GID"`
		Mode uint32 `json:"Mode"`
	} `json:"File"`
	ConfigID   string `json:"ConfigID"`
	ConfigName string `json:"ConfigName"`
}

// CreateService creates a service and returns its id.
func (c *Client) CreateService(ctx context.Context, spec *ServiceSpec) (string, error) {
	body, err := jsonBody(spec)
	if err != nil {
		return "", err
	}
	var out struct {
		ID string `json:"ID"`
	}
	if err := c.do(ctx, http.MethodPost, "/services/create", nil, body, "application/json", &out); err != nil {
		return "", fmt.Errorf("docker: create service %s: %w", spec.Name, err)
	}
	return out.ID, nil
}

// Service is one entry of Services.
type Service struct {
	ID   string `json:"ID"`
	Spec struct {
		Name   string            `json:"Name"`
		Labels map[string]string `json:"Labels"`
	} `json:"Spec"`
}

// Services lists the services carrying all of labels ("k=v").
func (c *Client) Services(ctx context.Context, labels ...string) ([]Service, error) {
	f, _ := json.Marshal(map[string][]string{"label": labels})
	var out []Service
	if err := c.do(ctx, http.MethodGet, "/services", url.Values{"filters": {string(f)}}, nil, "", &out); err != nil {
		return nil, fmt.Errorf("docker: list services: %w", err)
	}
	return out, nil
}

// RemoveService removes a service; a missing one is fine.
func (c *Client) RemoveService(ctx context.Context, id string) error {
	if err := c.do(ctx, http.MethodDelete, "/services/"+id, nil, nil, "", nil); err != nil && !IsNotFound(err) {
		return fmt.Errorf("docker: remove service %s: %w", id, err)
	}
	return nil
}

// Task is one task of a service.
type Task struct {
	ID           string `json:"ID"`
	ServiceID    string `json:"ServiceID"`
	NodeID       string `json:"NodeID"`
	DesiredState string `json:"DesiredState"`
	Status       struct {
		State           string `json:"State"`
		Message         string `json:"Message"`
		Err             string `json:"Err"`
		ContainerStatus struct {
			ContainerID string `json:"ContainerID"`
			ExitCode    int    `json:"ExitCode"`
		} `json:"ContainerStatus"`
	} `json:"Status"`
}

// Tasks lists the tasks of service id.
func (c *Client) Tasks(ctx context.Context, service string) ([]Task, error) {
	f, _ := json.Marshal(map[string][]string{"service": {service}})
	var out []Task
	if err := c.do(ctx, http.MethodGet, "/tasks", url.Values{"filters": {string(f)}}, nil, "", &out); err != nil {
		return nil, fmt.Errorf("docker: list tasks: %w", err)
	}
	return out, nil
}

// CreateConfig stores data as a Swarm config and returns its id.
func (c *Client) CreateConfig(ctx context.Context, name string, labels map[string]string, data []byte) (string, error) {
	body, err := jsonBody(map[string]any{"Name": name, "Labels": labels, "Data": base64.StdEncoding.EncodeToString(data)})
	if err != nil {
		return "", err
	}
	var out struct {
		ID string `json:"ID"`
	}
	if err := c.do(ctx, http.MethodPost, "/configs/create", nil, body, "application/json", &out); err != nil {
		return "", fmt.Errorf("docker: create config %s: %w", name, err)
	}
	return out.ID, nil
}

// Configs lists the ids of the configs carrying all of labels.
func (c *Client) Configs(ctx context.Context, labels ...string) ([]string, error) {
	f, _ := json.Marshal(map[string][]string{"label": labels})
	var out []struct {
		ID string `json:"ID"`
	}
	if err := c.do(ctx, http.MethodGet, "/configs", url.Values{"filters": {string(f)}}, nil, "", &out); err != nil {
		return nil, fmt.Errorf("docker: list configs: %w", err)
	}
	ids := make([]string, len(out))
	for i, o := range out {
		ids[i] = o.ID
	}
	return ids, nil
}

// RemoveConfig removes a config; a missing one is fine.
func (c *Client) RemoveConfig(ctx context.Context, id string) error {
	if err := c.do(ctx, http.MethodDelete, "/configs/"+id, nil, nil, "", nil); err != nil && !IsNotFound(err) {
		return fmt.Errorf("docker: remove config %s: %w", id, err)
	}
	return nil
}

// ExecAttached runs argv in container id with its streams attached to in, out and
// errw, and returns the program's exit status.
func (c *Client) ExecAttached(ctx context.Context, id string, argv []string, in io.Reader, out, errw io.Writer) (int, error) {
	body, err := jsonBody(map[string]any{"Cmd": argv, "AttachStdin": in != nil, "AttachStdout": true, "AttachStderr": true, "Tty": false})
	if err != nil {
		return 0, err
	}
	var created struct {
		ID string `json:"Id"`
	}
	if err := c.do(ctx, http.MethodPost, "/containers/"+id+"/exec", nil, body, "application/json", &created); err != nil {
		return 0, fmt.Errorf("docker: exec in %s: %w", id, err)
	}
	// Start hijacks the connection: a raw HTTP/1.1 request on a socket of our own.
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.sock)
	if err != nil {
		return 0, fmt.Errorf("docker: exec: %w", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	start := `{"Detach":false,"Tty":false}`
	fmt.Fprintf(conn, "POST /%s/exec/%s/start HTTP/1.1\r\nHost: docker\r\nContent-Type: application/json\r\nConnection: Upgrade\r\nUpgrade: tcp\r\nContent-Length: %d\r\n\r\n%s",
		APIVersion, created.ID, len(start), start)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, fmt.Errorf("docker: exec start: %w", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols && resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, fmt.Errorf("docker: exec start: HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	if in != nil {
		go func() {
			_, _ = io.Copy(conn, in)
			if cw, ok := conn.(interface{ CloseWrite() error }); ok {
				_ = cw.CloseWrite()
			}
		}()
	}
	if err := copyStreams(br, out, errw); err != nil && ctx.Err() == nil {
		return 0, fmt.Errorf("docker: exec: %w", err)
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	var st struct {
		Running  bool `json:"Running"`
		ExitCode int  `json:"ExitCode"`
	}
	if err := c.do(ctx, http.MethodGet, "/exec/"+created.ID+"/json", nil, nil, "", &st); err != nil {
		return 0, fmt.Errorf("docker: exec inspect: %w", err)
	}
	return st.ExitCode, nil
}

// copyStreams copies a multiplexed (non-TTY) attach stream into out and errw until
// it ends.
func copyStreams(r io.Reader, out, errw io.Writer) error {
	var h [8]byte
	for {
		if _, err := io.ReadFull(r, h[:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		w := out
		if h[0] == 2 {
			w = errw
		}
		if w == nil {
			w = io.Discard
		}
		if _, err := io.CopyN(w, r, int64(binary.BigEndian.Uint32(h[4:8]))); err != nil {
			return err
		}
	}
}

// CopyFrom reads path (a file or a directory) out of container id and calls fn for
// every regular file in it, with its path relative to path's parent.
func (c *Client) CopyFrom(ctx context.Context, id, path string, fn func(name string, r io.Reader) error) error {
	resp, err := c.send(ctx, http.MethodGet, "/containers/"+id+"/archive", url.Values{"path": {path}}, nil, "")
	if err != nil {
		return fmt.Errorf("docker: copy %s from %s: %w", path, id, err)
	}
	defer resp.Body.Close()
	tr := tar.NewReader(resp.Body)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("docker: copy %s from %s: %w", path, id, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if err := fn(h.Name, tr); err != nil {
			return err
		}
	}
}
