package redisquota_test

import (
	"context"
	"log"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-http/switchboard/factory"
	redisquota "github.com/switchboard-http/switchboard/quotas/redis"
)

// One vendor quota for every replica: clients.yaml sets
// rate_limit.scope: fleet, and the registry decides through Redis. A
// Redis Cluster is the same call with redis.UniversalOptions listing
// several Addrs (or redis.NewClusterClient).
func Example_open() {
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs:                 []string{"127.0.0.1:6379"},
		ContextTimeoutEnabled: true, // store_timeout bounds a hung connection too
		MaxRetries:            -1,   // a failed decision falls back at once
	})
	defer rdb.Close() // after clients.Close

	clients, err := factory.Open(context.Background(), factory.Options{
		File:   "clients.yaml",
		Quotas: redisquota.New(rdb, redisquota.Options{Prefix: "checkout:"}),
	})
	if err != nil {
		log.Fatal(err) // e.g. clients.stripe.rate_limit.scope: fleet needs a quota store
	}
	defer clients.Close()

	resp, err := clients.Get("stripe").Get("https://api.stripe.com/v1/charges")
	if err != nil {
		log.Fatal(err) // errors.Is(err, middleware.ErrRateLimited): refused before it was sent
	}
	resp.Body.Close()
}
