package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"

	"github.com/mimlstream/mimlstream/internal/cli"
	"github.com/mimlstream/mimlstream/internal/embedded/broker"
	"github.com/mimlstream/mimlstream/internal/kafkasec"
	"github.com/mimlstream/mimlstream/internal/stream/kafkaio"
	"github.com/mimlstream/mimlstream/internal/stream/service"
	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

// runBroker is `mimlctl broker`: franz-go's kfake on a fixed loopback
// port, with the pipeline's topics created, so the services can run as
// separate processes on a development machine. It lives in the command,
// not in internal/mimlctl, because only this command may link the
// embedded broker.
func runBroker(ctx context.Context, env service.Env, args []string) error {
	fs := cli.NewFlagSet("mimlctl-broker", `Usage: mimlctl broker [flags]

Runs a throwaway Kafka-protocol broker (franz-go's kfake) on 127.0.0.1 until
SIGTERM or Ctrl-C, with the pipeline's topics created. For development and
trying the services as separate processes: its records live in a temporary
directory removed when it stops (nothing survives a restart), it listens
on loopback only, and it is not a production broker. --tls-cert/--tls-key make
the listener TLS-only; --user turns SASL on for the users given.`, env.Stderr)
	port := fs.Int("port", 9092, "loopback `port` to listen on (0: any free port)")
	var topics cli.StringList
	fs.Var(&topics, "topic", "topic to create (repeatable or comma-separated; default: bags, bags-train, annotations, dead-letters)")
	partitions := fs.Int("partitions", 4, "partitions of each topic")
	cert := fs.String("tls-cert", "", "PEM server certificate `file` (with --tls-key: TLS only)")
	key := fs.String("tls-key", "", "PEM private key `file` of --tls-cert")
	var users cli.StringList
	fs.Var(&users, "user", "SASL user `MECHANISM:NAME:PASSWORD` (repeatable; MECHANISM PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)")
	if err := service.ParseFlags(fs, args); err != nil {
		return err
	}
	if *port < 0 || *port > 65535 {
		return cli.Usagef("--port %d: out of range", *port)
	}
	if *partitions < 1 {
		return cli.Usagef("--partitions %d < 1", *partitions)
	}
	if (*cert == "") != (*key == "") {
		return cli.Usagef("--tls-cert and --tls-key go together")
	}
	// The topics are created through the Kafka protocol once the broker
	// listens, as the services create theirs, so they get the same
	// configuration (compacted annotations and training bags, retention).
	o := broker.Options{Port: *port, Partitions: *partitions}
	if len(topics) == 0 {
		topics = wire.DefaultTopics().All()
	}
	for _, u := range users {
		mech, rest, ok1 := strings.Cut(u, ":")
		name, pass, ok2 := strings.Cut(rest, ":")
		switch {
		case !ok1 || !ok2 || name == "" || pass == "":
			return cli.Usagef("--user %q: want MECHANISM:NAME:PASSWORD", redact(u))
		case mech != "PLAIN" && mech != "SCRAM-SHA-256" && mech != "SCRAM-SHA-512":
			return cli.Usagef("--user: mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", mech)
		}
		o.Users = append(o.Users, broker.User{Mechanism: mech, Name: name, Password: pass})
	}
	if *cert != "" {
		kp, err := tls.LoadX509KeyPair(*cert, *key)
		if err != nil {
			return cli.Usagef("--tls-cert/--tls-key: %w", err)
		}
		o.TLS = &tls.Config{Certificates: []tls.Certificate{kp}, MinVersion: tls.VersionTLS12}
	}
	b, err := broker.Start(o)
	if err != nil {
		return err
	}
	defer b.Close()
	if err := createTopics(ctx, b.Addrs(), o, topics); err != nil {
		return err
	}
	security := "plaintext"
	if o.TLS != nil {
		security = "TLS"
	}
	if len(o.Users) > 0 {
		security += fmt.Sprintf(", SASL (%d users)", len(o.Users))
	}
	fmt.Fprintf(env.Stdout, "broker listening on %s (%s); topics %s with %d partitions; Ctrl-C stops it and loses its data\n",
		strings.Join(b.Addrs(), ","), security, strings.Join(topics, ", "), o.Partitions)
	<-ctx.Done()
	return nil
}

// createTopics creates the topics on the broker just started, as its own
// client (TLS without verification: it is our own loopback listener; SASL
// as the first user), with the configuration the services give the
// pipeline's topics; other topic names get the broker's defaults.
func createTopics(ctx context.Context, addrs []string, o broker.Options, topics []string) error {
	sc := kafkasec.Config{TLS: o.TLS != nil, Insecure: o.TLS != nil}
	if len(o.Users) > 0 {
		u := o.Users[0]
		sc.Mechanism, sc.User, sc.Password = strings.ToLower(u.Mechanism), u.Name, u.Password
	}
	conn, err := sc.Resolve()
	if err != nil {
		return err
	}
	configs := map[string]map[string]string{}
	for _, s := range service.DefaultKafka().TopicSpecs() {
		configs[s.Name] = s.Configs
	}
	specs := make([]kafkaio.TopicSpec, len(topics))
	for i, t := range topics {
		specs[i] = kafkaio.TopicSpec{Name: t, Configs: configs[t]}
	}
	return kafkaio.EnsureTopicSpecs(ctx, addrs, conn, o.Partitions, specs...)
}

// redact keeps a password out of an error message.
func redact(user string) string {
	parts := strings.SplitN(user, ":", 3)
	if len(parts) == 3 {
		parts[2] = "***"
	}
	return strings.Join(parts, ":")
}
