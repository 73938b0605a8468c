// Package fleet runs several processes over one set of shards.
package fleet
